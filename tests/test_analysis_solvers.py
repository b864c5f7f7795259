"""BDC load of a given P, the assignment solvers, and ``mpi-coded solve``
(docs/theory.md (B.3), (B.4))."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpi_coded import cli
from mpi_coded.analysis import solvers
from mpi_coded.analysis.bdc_load import (
    LoadEvaluator,
    bdc_load,
    finishing_sets,
    make_instance,
    servers_needed_pmf,
)
from mpi_coded.coded.assignment import check_assignment, format_assignment
from mpi_coded.coded.mapend import map_end
from mpi_coded.coded.placement import build_placement
from mpi_coded.coded.schemes import coded_params
from mpi_coded.coded.shuffle import average_load
from mpi_coded.errors import EXIT_BAD_INPUT, ConfigError


def _valid(K, q, p, eta, T):
    try:
        return make_instance(K, q, Fraction(p, q), eta, T)
    except ConfigError:
        return None


# tiny instances (at most ~3400 valid P each); in the first four bnb beats the heuristic
TINY = [make_instance(K, q, Fraction(p, q), eta, T) for K, q, p, eta, T in [
    (4, 3, 2, 2, 3), (5, 3, 2, 1, 2), (5, 4, 2, 1, 2), (5, 4, 3, 1, 2),
    (3, 2, 1, 3, 3), (4, 2, 1, 2, 4), (4, 2, 1, 3, 3), (4, 4, 1, 3, 4), (5, 2, 1, 3, 3),
    (5, 3, 1, 3, 3), (5, 5, 3, 1, 2), (4, 4, 3, 3, 4)]]


@st.composite
def instances(draw, max_cells=40):
    K = draw(st.integers(2, 6))
    q = draw(st.integers(1, K))
    p = draw(st.integers(1, q))
    eta = draw(st.integers(1, 4))
    T = draw(st.sampled_from([1, 2, 3, 4, 6]))
    inst = _valid(K, q, p, eta, T)
    if inst is None or inst.n_batches * T > max_cells:
        from hypothesis import reject

        reject()
    return inst


def all_assignments(inst):
    """Every valid P (independent of the solvers): rows are compositions of eta_b."""
    comps = [np.array(c) for c in itertools.product(range(inst.rows_per_batch + 1),
                                                    repeat=inst.T)
             if sum(c) == inst.rows_per_batch]

    def rec(b, cols):
        if b == inst.n_batches:
            if not any(cols):
                yield []
            return
        for c in comps:
            if all(c[t] <= cols[t] for t in range(inst.T)):
                yield from ([c] + rest for rest in rec(b + 1, [x - y for x, y in zip(cols, c)]))

    for rows in rec(0, [inst.code_length] * inst.T):
        yield np.array(rows)


# --- the load of a given P ----------------------------------------------------------------


def test_heuristic_reproduces_spec_b4():
    inst = make_instance(4, 2, 1, 2, 6)
    sol = solvers.heuristic(inst)
    assert format_assignment(sol.P) == ["110000", "001100", "000011",
                                        "110000", "001100", "000011"]


@pytest.mark.parametrize("T", [1, 2, 5, 10, 25, 50, 125, 250])
def test_paper_setting_heuristic_has_the_unified_load(T):
    # the BDC paper: K=9, q=6, mu=1/3, eta_b=250 (m=6000): for T <= eta_b the heuristic
    # P meets the unified load 11/24, and the map phase never needs more than q
    inst = make_instance(9, 6, "1/3", 250, T)
    assert inst.m == 6000 and inst.r == 9000
    sol = solvers.heuristic(inst)
    assert sol.load == Fraction(11, 24) and sol.exact
    assert sol.servers_needed == 6.0


def test_paper_setting_beyond_eta_b_costs_more():
    inst = make_instance(9, 6, "1/3", 250, 3000)
    res = bdc_load(inst, solvers.heuristic(inst).P)
    assert res.load > Fraction(11, 24)
    assert res.load <= min(res.strategy1, res.strategy2)  # best is chosen per Q
    pmf, exact = servers_needed_pmf(inst, solvers.heuristic(inst).P)
    assert exact and sum(pmf.values()) == pytest.approx(1.0) and max(pmf) > 6


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(instances(), st.integers(0, 2**32 - 1), st.sampled_from([1, 2, 3]))
def test_counting_equals_the_shuffle_plans(inst, seed, n_mult):
    P = solvers.random_assignment(inst, np.random.default_rng(seed))
    N = inst.q * n_mult
    params = coded_params("bdc", inst.K, inst.q, inst.mu, inst.rows_per_batch, n=2, N=N,
                         T=inst.T, field="float64")
    placement = build_placement(params, P)
    res = bdc_load(inst, P, N=N)
    assert res.load == average_load(placement)
    assert res.strategy1 == average_load(placement, 1)
    assert res.strategy2 == average_load(placement, 2)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(instances(max_cells=30), st.integers(0, 2**32 - 1))
def test_servers_needed_equals_every_finishing_order(inst, seed):
    P = solvers.random_assignment(inst, np.random.default_rng(seed))
    params = coded_params("bdc", inst.K, inst.q, inst.mu, inst.rows_per_batch, n=1, N=inst.q,
                         T=inst.T, field="float64")
    placement = build_placement(params, P)
    counts: dict[int, int] = {}
    orders = list(itertools.permutations(range(inst.K)))
    for order in orders:
        g = len(map_end(placement, order).finishers)
        counts[g] = counts.get(g, 0) + 1
    pmf, exact = servers_needed_pmf(inst, P)
    assert exact
    assert pmf == pytest.approx({g: c / len(orders) for g, c in counts.items()})
    sampled, exact = servers_needed_pmf(inst, P, exact_limit=0, samples=4000, seed=seed)
    assert not exact
    for g, prob in pmf.items():
        assert sampled.get(g, 0.0) == pytest.approx(prob, abs=0.05)


def test_sampled_load_is_close_to_exact():
    inst = make_instance(9, 6, "1/3", 250, 1500)
    P = solvers.heuristic(inst).P
    exact = bdc_load(inst, P)
    sampled = bdc_load(inst, P, exact_limit=10, samples=400, seed=3)
    assert exact.exact and not sampled.exact and sampled.n_sets == 400
    assert float(sampled.load) == pytest.approx(float(exact.load), abs=0.01)


# --- solvers --------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(instances(), st.integers(0, 2**32 - 1))
def test_random_is_valid_and_seeded(inst, seed):
    a = solvers.solve_random(inst, seed)
    check_assignment(a.P, inst.n_batches, inst.rows_per_batch, inst.T)
    assert np.array_equal(a.P, solvers.solve_random(inst, seed).P)
    assert a.load == bdc_load(inst, a.P).load


def test_random_seeds_differ():
    inst = make_instance(9, 6, "1/3", 250, 250)
    assert not np.array_equal(solvers.solve_random(inst, 1).P, solvers.solve_random(inst, 2).P)


@pytest.mark.parametrize("inst", TINY, ids=lambda i: f"K{i.K}q{i.q}p{i.replication}"
                                                      f"e{i.rows_per_batch}T{i.T}")
def test_branch_and_bound_equals_brute_force(inst):
    ev = LoadEvaluator(inst, finishing_sets(inst)[0])
    brute = min(ev.load(P) for P in all_assignments(inst))
    sol = solvers.branch_and_bound(inst)
    check_assignment(sol.P, inst.n_batches, inst.rows_per_batch, inst.T)
    assert sol.load == brute == ev.load(sol.P)
    assert sol.load <= solvers.heuristic(inst).load


def test_tiny_instances_include_heuristic_gaps():
    gaps = [solvers.branch_and_bound(i).load < solvers.heuristic(i).load for i in TINY[:4]]
    assert all(gaps)


@pytest.mark.parametrize("strategy", [1, 2])
def test_branch_and_bound_for_one_strategy(strategy):
    inst = make_instance(5, 3, "2/3", 1, 2)
    ev = LoadEvaluator(inst, finishing_sets(inst)[0], strategy)
    brute = min(ev.load(P) for P in all_assignments(inst))
    assert solvers.branch_and_bound(inst, strategy=strategy).load == brute


def test_branch_and_bound_beats_the_heuristic_somewhere():
    inst = make_instance(4, 2, 1, 2, 6)  # docs/theory.md (B.4)'s example
    assert solvers.branch_and_bound(inst).load == 0 < solvers.heuristic(inst).load


def test_branch_and_bound_refuses_large_instances():
    with pytest.raises(ConfigError, match="solver: bnb is exact and only for small"):
        solvers.branch_and_bound(make_instance(9, 6, "1/3", 250, 250))
    with pytest.raises(ConfigError, match="solver: bnb gave up after 5 search nodes"):
        solvers.branch_and_bound(make_instance(5, 3, "2/3", 2, 2), node_limit=5)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(instances(), st.integers(0, 2**32 - 1), st.integers(0, 30))
def test_hybrid_never_worse_than_its_start(inst, seed, iterations):
    start = solvers.random_assignment(inst, np.random.default_rng(seed))
    sol = solvers.hybrid(inst, start=start, seed=seed, iterations=iterations)
    check_assignment(sol.P, inst.n_batches, inst.rows_per_batch, inst.T)
    assert sol.load <= bdc_load(inst, start).load
    assert sol.load == bdc_load(inst, sol.P).load


def test_hybrid_improves_the_heuristic():
    inst = make_instance(5, 3, 1, 1, 2)
    assert solvers.hybrid(inst, iterations=50).load < solvers.heuristic(inst).load
    big = make_instance(9, 6, "1/3", 250, 3000)
    assert solvers.hybrid(big, iterations=100).load < solvers.heuristic(big).load


def test_save_and_load_for_the_runtime(tmp_path):
    inst = make_instance(4, 2, 1, 2, 6)
    sol = solvers.branch_and_bound(inst)
    path = tmp_path / "P.npy"
    solvers.save_assignment(path, sol.P)
    P = solvers.load_assignment(path, inst)
    assert np.array_equal(P, sol.P) and P.dtype == np.int64
    params = coded_params("bdc", 4, 2, 1, 2, n=3, N=2, T=6)
    assert np.array_equal(build_placement(params, P).assignment, P)
    with pytest.raises(ConfigError, match="assignment: must have shape"):
        solvers.load_assignment(path, make_instance(4, 2, 1, 2, 3))
    with pytest.raises(ConfigError, match="assignment: cannot read"):
        solvers.load_assignment(tmp_path / "missing.npy")


# --- mpi-coded solve --------------------------------------------------------------------------


def run(argv):
    """The real command line (``model`` and ``solve`` are wired into cli.main)."""
    return cli.main(argv)


PAPER = ["solve", "--K", "9", "--q", "6", "--mu", "1/3", "--rows-per-batch", "250", "--T", "250"]


@pytest.mark.parametrize("solver", ["heuristic", "hybrid"])
def test_solve_json_paper_setting(capsys, solver, tmp_path):
    out = tmp_path / "P.npy"
    assert run(PAPER + ["--solver", solver, "--json", "--iterations", "20",
                        "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.count("\n") == 1
    obj = json.loads(text)
    assert obj == {"solver": solver, "load": pytest.approx(11 / 24, abs=5e-7),
                   "servers_needed": 6.0}
    assert set(obj) == {"solver", "load", "servers_needed"}
    assert solvers.load_assignment(out, make_instance(9, 6, "1/3", 250, 250)).shape == (36, 250)


def test_solve_bnb_readable(capsys):
    assert run(["solve", "--K", "4", "--q", "2", "--mu", "1", "--rows-per-batch", "2",
                "--T", "6", "--solver", "bnb"]) == 0
    assert capsys.readouterr().out.startswith("bnb: K=4 q=2 mu=1 rows_per_batch=2 T=6 load=0 ")


@pytest.mark.parametrize("argv,needle", [
    (["--T", "7"], "T: T must divide m = 6000"),
    (["--mu", "1/4"], "mu: mu * q must be an integer"),
    (["--q", "10"], "q: must satisfy q <= K"),
    (["--rows-per-batch", "0"], "rows_per_batch: must be an integer >= 1"),
    (["--strategy", "3"], "strategy: must be best, 1 or 2"),
    (["--iterations", "-1"], "iterations: must be >= 0"),
    (["--solver", "bnb"], "solver: bnb is exact and only for small instances"),
    (["--out", "/nonexistent-dir/P.npy"], "out: cannot write the matrix"),
])
def test_solve_bad_input(capsys, argv, needle):
    base = dict(zip(PAPER[1::2], PAPER[2::2]))
    base["--solver"] = "heuristic"
    base.update(dict(zip(argv[::2], argv[1::2])))
    code = run(["solve", *itertools.chain.from_iterable(base.items())])
    assert code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


@pytest.mark.parametrize("argv", [
    PAPER + ["--solver", "greedy"],
    PAPER[:-2] + ["--solver", "heuristic"],
    PAPER + ["--solver", "heuristic", "--K", "nine"],
])
def test_solve_bad_arguments_one_line(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        run(argv)
    assert exc.value.code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error:" in err
