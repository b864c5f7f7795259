"""The elastic-computing planner against the worked example of the heterogeneous CEC paper
(docs/theory.md, A.4)."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction
from fractions import Fraction as F

import pytest

from mpi_coded.cec import cyclic_sets, filling, integer_rows, make_plan, optimal_load
from mpi_coded.cec.integer_rows import integer_time
from mpi_coded.cec.waste import transition_waste
from mpi_coded.cli import main

SPEEDS = {1: F(1), 2: F(1), 3: F(3, 2), 4: F(3, 2), 5: F(2), 6: F(2)}

# docs/theory.md (A.4): step, available, mu, row sets (fraction -> machines)
SEED_TABLE = [
    ([1, 2, 3, 4, 5, 6], ["1/3", "1/3", "1/2", "1/2", "2/3", "2/3"],
     [("1/3", [1, 5, 6]), ("1/3", [2, 3, 4]), ("1/6", [3, 5, 6]), ("1/6", [4, 5, 6])]),
    ([1, 2, 3, 5, 6], ["2/5", "2/5", "3/5", "4/5", "4/5"],
     [("2/5", [1, 5, 6]), ("1/5", [2, 3, 6]), ("1/5", [2, 3, 5]), ("1/5", [3, 5, 6])]),
    ([1, 2, 3, 5], ["4/7", "4/7", "6/7", "1"],
     [("3/7", [1, 3, 5]), ("1/7", [1, 2, 5]), ("3/7", [2, 3, 5])]),
    ([2, 3, 5], ["1", "1", "1"], [("1", [2, 3, 5])]),
]


@pytest.mark.parametrize("avail,mu,sets", SEED_TABLE)
def test_seed_example_exactly(avail, mu, sets):
    plan = make_plan("heterogeneous", SPEEDS, 3, avail)
    d = plan.to_dict()
    assert [d["load"][str(n)] for n in avail] == mu
    assert [(s["fraction"], s["machines"]) for s in d["sets"]] == sets
    c, _ = optimal_load({n: SPEEDS[n] for n in avail}, 3)
    assert plan.time == c


def test_seed_step_times_and_cyclic_times():
    het = [make_plan("heterogeneous", SPEEDS, 3, a).time for a, _, _ in SEED_TABLE]
    cyc = [make_plan("cyclic", SPEEDS, 3, a).time for a, _, _ in SEED_TABLE]
    assert het == [F(1, 3), F(2, 5), F(4, 7), F(1)]
    assert cyc == [F(1, 2), F(3, 5), F(3, 4), F(1)]
    assert sum(cyc) == F(57, 20) and sum(het) == F(242, 105)  # 2.85 and 2.305 in the issue
    assert abs(float(sum(cyc) / sum(het)) - 1.2366) < 1e-4


def test_seed_example_in_integer_rows_is_the_same_plan():
    for avail, _, sets in SEED_TABLE:
        plan = make_plan("heterogeneous", SPEEDS, 3, avail, rows=420)
        d = plan.to_dict()
        assert [(s["fraction"], s["machines"]) for s in d["sets"]] == sets
        assert d["sets"][-1]["rows"][1] == 420
        assert all(s["rows"][0] < s["rows"][1] for s in d["sets"])


def test_all_equal_machines_is_all_ones():
    c, mu = optimal_load({1: F(1), 2: F(5), 3: F(2)}, 3)
    assert c == 1 and set(mu.values()) == {1}


def test_filling_rejects_invalid_loads():
    from mpi_coded.errors import ConfigError

    with pytest.raises(ConfigError, match="sum"):
        filling({1: F(1, 2), 2: F(1, 2)}, 2, F(1))
    with pytest.raises(ConfigError, match="load of machine"):
        filling({1: F(3, 2), 2: F(1, 2)}, 2, F(1))


def test_cyclic_pieces():
    sets = cyclic_sets([2, 3, 5, 6], 3, rows=10)
    assert [s.size for s in sets] == [2, 3, 2, 3]
    assert [s.machines for s in sets] == [(2, 3, 5), (3, 5, 6), (2, 5, 6), (2, 3, 6)]


def brute_force_integer(speeds, L, rows):
    ids = sorted(speeds)
    best = None
    for ks in itertools.product(range(rows + 1), repeat=len(ids)):
        if sum(ks) != L * rows:
            continue
        t = max(F(k) / speeds[n] for k, n in zip(ks, ids))
        best = t if best is None else min(best, t)
    return best


@pytest.mark.parametrize("speeds,L,rows", [
    ({1: F(1), 2: F(1), 3: F(3, 2), 4: F(2)}, 2, 5),
    ({1: F(1), 2: F(7, 3), 3: F(1, 2)}, 2, 7),
    ({1: F(3), 2: F(1), 3: F(1), 4: F(1), 5: F(9, 4)}, 3, 4),
])
def test_integer_rows_optimal_against_brute_force(speeds, L, rows):
    k = integer_rows(speeds, L, rows)
    assert sum(k.values()) == L * rows
    assert all(0 <= v <= rows for v in k.values())
    assert integer_time(k, speeds) == brute_force_integer(speeds, L, rows)


def test_transition_waste_of_the_seed_schedule():
    prev = None
    wastes = []
    for avail, _, _ in SEED_TABLE:
        plan = make_plan("heterogeneous", SPEEDS, 3, avail)
        wastes.append(transition_waste(prev, plan))
        prev = plan
    # step 2: machine 3 moves 1/6 of its rows, machine 5 1/15, machine 6 1/30 (beyond load growth)
    assert wastes == [0, F(4, 15), F(6, 35), 0]
    same = make_plan("heterogeneous", SPEEDS, 3, [1, 2, 3, 4, 5, 6])
    assert transition_waste(same, same) == 0


def test_plan_cli_json(capsys):
    rc = main(["plan", "cec", "--speeds", "1,1,1.5,1.5,2,2", "--L", "3",
               "--available", "1,2,3,5,6", "--json"])
    assert rc == 0
    d = json.loads(capsys.readouterr().out)
    assert d == {
        "policy": "heterogeneous", "L": 3, "available": [1, 2, 3, 5, 6],
        "load": {"1": "2/5", "2": "2/5", "3": "3/5", "5": "4/5", "6": "4/5"},
        "time": "2/5",
        "sets": [{"fraction": "2/5", "machines": [1, 5, 6]},
                 {"fraction": "1/5", "machines": [2, 3, 6]},
                 {"fraction": "1/5", "machines": [2, 3, 5]},
                 {"fraction": "1/5", "machines": [3, 5, 6]}],
    }


def test_plan_cli_rows_and_cyclic(capsys):
    rc = main(["plan", "cec", "--speeds", "1,1,1.5,1.5,2,2", "--L", "3", "--rows", "420",
               "--policy", "cyclic", "--available", "2,3,5,6", "--json"])
    assert rc == 0
    d = json.loads(capsys.readouterr().out)
    assert d["policy"] == "cyclic" and d["time"] == "3/4"
    assert [s["rows"] for s in d["sets"]] == [[0, 105], [105, 210], [210, 315], [315, 420]]
    assert set(d["load"].values()) == {"3/4"}


def test_plan_cli_human_readable(capsys):
    assert main(["plan", "cec", "--speeds", "1,2", "--L", "1"]) == 0
    out = capsys.readouterr().out
    assert "heterogeneous plan" in out and "time=1/3" in out


def test_plan_cache_returns_the_plan_solved_once_and_keys_on_prev_only_where_used():
    from mpi_coded.cec.plan import PlanCache

    speeds = {1: Fraction(1), 2: Fraction(3, 2), 3: Fraction(2), 4: Fraction(1)}
    cache = PlanCache()
    first = cache.plan("heterogeneous", speeds, 2, [1, 2, 3, 4], rows=12)
    again = cache.plan("heterogeneous", dict(speeds), 2, [1, 2, 3, 4], rows=12, prev=first)
    assert again is first and (cache.hits, cache.misses) == (1, 1)  # prev unused: a hit
    assert again == make_plan("heterogeneous", speeds, 2, [1, 2, 3, 4], rows=12)
    fewer = cache.plan("heterogeneous", speeds, 2, [1, 2, 4], rows=12)
    assert fewer == make_plan("heterogeneous", speeds, 2, [1, 2, 4], rows=12)
    tw = cache.plan("heterogeneous-tw", speeds, 2, [1, 2, 4], rows=12, prev=first)
    assert cache.plan("heterogeneous-tw", speeds, 2, [1, 2, 4], rows=12, prev=first) is tw
    other = cache.plan("heterogeneous-tw", speeds, 2, [1, 2, 4], rows=12, prev=fewer)
    assert other == make_plan("heterogeneous-tw", speeds, 2, [1, 2, 4], rows=12, prev=fewer)
    slower = cache.plan("heterogeneous", {**speeds, 3: Fraction(1)}, 2, [1, 2, 3, 4], rows=12)
    assert slower is not first and slower.time != first.time  # speeds are in the key
    assert (cache.hits, cache.misses) == (2, 5)


def test_plan_cache_asks_a_plugin_policy_every_time(monkeypatch):
    from mpi_coded.cec import plan as plan_mod
    from mpi_coded.cec.plan import PlanCache

    monkeypatch.setattr(plan_mod.POLICIES, "origin", lambda name: "my_plugin.py")
    calls = []
    real = plan_mod.make_plan
    monkeypatch.setattr(plan_mod, "make_plan",
                        lambda *a, **k: calls.append(a) or real(*a, **k))
    cache = PlanCache()
    speeds = {1: Fraction(1), 2: Fraction(1), 3: Fraction(1)}
    for _ in range(3):
        cache.plan("heterogeneous", speeds, 2, [1, 2, 3])
    assert len(calls) == 3 and cache.hits == cache.misses == 0
