"""A scheme declares its load once (its load rule, ``Scheme.load``): for every registered
scheme, the package's and a plugin's, ``mpi-coded load``, ``mpi-coded model`` and the
shuffle plan a run executes agree exactly at the settings it accepts (pure: the planner of
mpi_coded/coded/shuffle.py, no MPI); a plugin giving a second, contradicting form is
refused when it loads, in one line naming its file and both values."""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
from contextlib import nullcontext
from fractions import Fraction

import pytest

from conftest import ROOT, run_cli
from mpi_coded import plugins
from mpi_coded.analysis.model import predict
from mpi_coded.cli.coded import load_result
from mpi_coded.coded.mapend import map_end
from mpi_coded.coded.placement import build_placement
from mpi_coded.coded.schemes import REGISTRY
from mpi_coded.coded.shuffle import shuffle_plan
from mpi_coded.errors import ConfigError

REPLICATION = ROOT / "examples" / "replication.py"


def _example_scheme():
    spec = importlib.util.spec_from_file_location("replication_example", REPLICATION)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.SCHEME


def _params(s, K, q, mu):
    """The smallest runnable job of ``s`` at ``(K, q, mu)`` (None: it accepts none)."""
    for eta in range(1, 25):
        for T in ((2, 1) if s.partitioned else (1,)):
            try:
                return s.params(K, q, mu, eta, n=1, N=s.wait_for(K, q), T=T)
            except ConfigError:
                continue
    return None


def _orders(K, q_eff):
    """A few finishing orders (the first ``q_eff`` are ``Q``)."""
    ks = list(range(K))
    return [ks, ks[::-1], ks[1::2] + ks[::2]][: 3 if q_eff < K else 1]


def _mean_unpadded_load(p):
    """The plan's load without padding, averaged over every set ``Q``."""
    pl, loads = build_placement(p), []
    for Q in itertools.combinations(range(p.K), p.wait_for):
        plan = shuffle_plan(pl, map_end(pl, [*Q, *(k for k in range(p.K) if k not in Q)]))
        loads.append(plan.load - plan.padding / (p.m * p.N))
    return sum(loads, Fraction(0)) / len(loads)


def _schemes():
    return [*(REGISTRY.lookup(n) for n in REGISTRY), _example_scheme()]


@pytest.mark.parametrize("scheme", _schemes(), ids=lambda s: s.name)
def test_load_model_and_plan_agree_at_every_accepted_setting(scheme):
    with REGISTRY.registered(scheme) if scheme.name not in REGISTRY else nullcontext():
        accepted = 0
        for K, q, mu in plugins.REFERENCE_SETTINGS:
            p = _params(scheme, K, q, mu)
            if p is None:
                continue
            accepted += 1
            model = predict(p)
            if not scheme.closed_form_load:  # says so once: not the load command's
                assert scheme.name not in REGISTRY.names(closed_form_load=True)
                if scheme.takes_assignment:  # bdc: the model's load is its P's mean over Q
                    assert model.load_exact == _mean_unpadded_load(p)
                else:  # lt: the model's is approximate
                    assert model.load_exact is None
                continue
            declared = scheme.load(K, q, mu)
            assert load_result(scheme.name, K, q, mu)["load_exact"] == str(declared.load)
            assert model.load_exact == declared.load
            pl = build_placement(p)
            for order in _orders(K, p.wait_for):
                plan = shuffle_plan(pl, map_end(pl, order))
                mN = p.m * p.N
                assert (plan.ideal_multicast / mN, Fraction(plan.unicast_values, mN)) == \
                    (declared.multicast, declared.unicast), (K, q, mu, order)
                assert scheme.load_mismatch(p, plan.load - plan.padding / mN) is None
        assert accepted >= 1


HELD_OUT = (REPLICATION.read_text()
            .replace("        copies(reference.K, reference.q)\n        return reference\n",
                     "        copies(reference.K, reference.q)\n        return reference\n\n"
                     "    def literal(self, K, q, mu, reference):  # the paper's form, wrong\n"
                     "        return Fraction(1, 2)\n")
            .replace("    def generator_ops(self, p: CodedParams",
                     "    def load(self, p):  # the model's load, wrong\n"
                     "        return Fraction(1, 2)\n\n"
                     "    def generator_ops(self, p: CodedParams"))


def test_a_replication_copy_with_a_wrong_paper_and_model_load_is_refused(tmp_path):
    assert "def literal" in HELD_OUT and "def load(self, p)" in HELD_OUT
    bad = tmp_path / "rep_wrong.py"
    bad.write_text(HELD_OUT)
    r = run_cli(["--plugin", str(bad), "load", "--scheme", "rep", "--K", "6", "--q", "3",
                 "--mu", "1/3"])
    assert r.returncode == 2
    err = r.stderr.strip().splitlines()
    assert len(err) == 1, r.stderr
    assert str(bad) in err[0] and "declares load 2/3" in err[0] and "says 1/2" in err[0]


def test_a_second_form_that_agrees_is_accepted():
    scheme = _example_scheme()

    class Agrees(type(scheme.loads)):
        def literal(self, K, q, mu, reference):
            return 1 - Fraction(1, q)

    plugins.check_scheme(dataclasses.replace(scheme, loads=Agrees()), "ok.py")
