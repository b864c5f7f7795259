"""A wrong map output or shuffle payload of the coded job, named without MPI
(mpi_coded.coded.locate), and the coded ``corrupt`` fault's spec."""

from __future__ import annotations

import numpy as np
import pytest

from mpi_coded.coded import locate as L
from mpi_coded.coded.code import build_code
from mpi_coded.coded.mapend import map_end
from mpi_coded.coded.placement import build_placement
from mpi_coded.coded.replay import random_instance
from mpi_coded.coded.schemes import coded_params
from mpi_coded.coded.shuffle import shuffle_plan
from mpi_coded.errors import ConfigError
from mpi_coded.faults import Answer, corrupt_entry, parse_fault
from mpi_coded.fields import get_field


def instance(scheme, field, order=(3, 1, 0, 5, 2, 4)):
    T, eta = (2, 2) if scheme == "bdc" else (1, 3)
    p = coded_params(scheme, 6, 4, "1/2", eta, n=4, N=8, T=T, field=field)
    pl = build_placement(p)
    F = get_field(field)
    A, X = random_instance(pl, F, 2)
    code = build_code(p, F)
    plan = shuffle_plan(pl, map_end(pl, list(order)))
    maps = {s: L.expected_map(code, F, pl, A, X, s) for s in plan.Q + plan.extra}
    pay = L.expected_payloads(plan, pl, F, maps, p.N)
    return p, pl, F, A, X, code, plan, maps, pay


def received_of(plan, pay, F):
    out = {}
    for k in plan.Q:
        mc, uc = plan.receives(k)
        parts = [pay[("multicast", i)] for i in mc] + [pay[("unicast", i)] for i in uc]
        out[k] = np.concatenate(parts) if parts else F.zeros(0)
    return out


def flip(values, F, seed=5):
    corrupt_entry(Answer(values, F.order, np.random.default_rng(seed)))


@pytest.mark.parametrize("scheme", ["unified", "bdc"])
@pytest.mark.parametrize("field", ["gf2^8", "float64"])
def test_nothing_is_named_when_everything_is_right(scheme, field):
    _, pl, F, A, X, code, plan, maps, pay = instance(scheme, field)
    got = {s: v.copy() for s, v in maps.items()}
    assert L.locate(plan, pl, code, F, A, X, got, received_of(plan, pay, F)) == []


@pytest.mark.parametrize("scheme", ["unified", "bdc"])
@pytest.mark.parametrize("field", ["gf2^8", "float64"])
def test_a_wrong_map_output_names_its_server_and_batch_once(scheme, field):
    _, pl, F, A, X, code, plan, maps, pay = instance(scheme, field)
    s = plan.Q[1]
    got = {k: v.copy() for k, v in maps.items()}
    flat = got[s].reshape(-1)
    i = int(np.random.default_rng(1).integers(flat.size))
    flat[i] = flat[i] ^ 7 if F.exact else flat[i] * 1.5 + 1.0
    # its payloads carry the wrong value: recompute them from its wrong map output
    sent = L.expected_payloads(plan, pl, F, got, X.shape[1])
    found = L.locate(plan, pl, code, F, A, X, got, received_of(plan, sent, F), attempt=2)
    assert [(w.server, w.phase) for w in found] == [(s, "map")]
    row = i // X.shape[1]
    assert found[0].batches == (pl.server_batches[s][row // pl.rows_per_batch],)
    assert found[0].values == 1 and found[0].attempt == 2
    assert found[0].to_dict()["server"] == s


@pytest.mark.parametrize("scheme", ["unified", "bdc"])
@pytest.mark.parametrize("field", ["gf2^8", "float64"])
@pytest.mark.parametrize("kind", ["multicast", "unicast"])
def test_a_wrong_payload_names_its_sender_message_and_receivers(scheme, field, kind):
    _, pl, F, A, X, code, plan, maps, pay = instance(scheme, field)
    keys = [k for k in pay if k[0] == kind and pay[k].size]
    if not keys:
        pytest.skip(f"no {kind} in this plan")
    key = keys[len(keys) // 2]
    sent = {k: v.copy() for k, v in pay.items()}
    flip(sent[key], F)
    found = L.locate(plan, pl, code, F, A, X, maps, received_of(plan, sent, F))
    msg = plan.multicasts[key[1]] if kind == "multicast" else plan.unicasts[key[1]]
    assert [(w.server, w.phase, w.message) for w in found] == \
        [(msg.sender, "shuffle", f"{kind} {key[1]}")]
    want = set(msg.receivers) if kind == "multicast" else {msg.receiver}
    assert set(found[0].receivers) == want
    assert found[0].batches  # the batch of the wrong value


def test_float_rounding_is_not_a_wrong_answer():
    _, pl, F, A, X, code, plan, maps, pay = instance("unified", "float64")
    got = {s: v * (1 + 1e-13) for s, v in maps.items()}
    assert L.wrong_maps(pl, F, maps, got) == []
    bad = {s: v.copy() for s, v in maps.items()}
    bad[plan.Q[0]][0, 0] = np.nan
    assert [w.server for w in L.wrong_maps(pl, F, maps, bad)] == [plan.Q[0]]


@pytest.mark.parametrize("spec,phase", [("corrupt:2:map@2", "map"),
                                        ("corrupt:2:shuffle", "shuffle"),
                                        ("corrupt:3:map:0.5", "map")])
def test_the_coded_corrupt_fault_parses(spec, phase):
    f = parse_fault(spec, "coded", 7)
    assert f.kind == "corrupt" and f.phase == phase


@pytest.mark.parametrize("spec", ["corrupt:2:answer", "corrupt:2:encode", "corrupt:2:reduce@1",
                                  "corrupt:2:map:2"])
def test_the_coded_corrupt_fault_refuses_other_phases(spec):
    with pytest.raises(ConfigError):
        parse_fault(spec, "coded", 7)


def test_the_elastic_corrupt_fault_still_wants_answer():
    with pytest.raises(ConfigError, match="corrupt PHASE must be answer"):
        parse_fault("corrupt:2:step", "cec", 7)
