"""Bigger coded jobs (K = 18, K = 24) and the ``bcast`` multicast transport, under mpiexec.

K = 18, q = 12, mu = 1/3 has C(18, 4) = 3060 batches (rows-per-batch 1: m = 2040 over
GF(2^16)); N = 48 makes every multicast segment split evenly (levels 4 and 3), so the
measured load is exactly the analytic one.  K = 24, q = 12, mu = 1/6 has C(24, 2) = 276
batches.  ``bcast`` sends every coded multicast with ``Ibcast`` on a communicator of its
group; its loads, outputs and ``bytes_on_wire`` must be those of ``p2p``.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli, run_mpi
from mpi_coded.coded.job import load_job
from mpi_coded.coded.mapend import MapEnd
from mpi_coded.coded.placement import build_placement
from mpi_coded.coded.schemes import get as get_scheme
from mpi_coded.coded.shuffle import shuffle_plan

K18 = ["--scheme", "unified", "--q", "12", "--mu", "1/3", "--rows-per-batch", "1",
       "--n", "4", "--N", "48", "--field", "gf2^16"]
K24 = ["--scheme", "unified", "--q", "12", "--mu", "1/6", "--rows-per-batch", "1",
       "--n", "4", "--N", "24", "--field", "gf2^16"]


def launch(tmp_path: Path, name: str, K: int, args: list[str], timeout: float = 300
           ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    out = tmp_path / f"{name}.jsonl"
    r = run_mpi(K + 1, ["run", "coded", "--K", str(K), *args, "--out", str(out)],
                timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    config = next(x for x in lines if x["kind"] == "config")
    return config, [x for x in lines if x["kind"] == "run"]


def check_analytic(recs: list[dict[str, Any]], K: int, q: int, mu: Fraction) -> None:
    formula = get_scheme("unified").load(K, q, mu).load
    for r in recs:
        assert r["verified"] is True and r["max_error"] == 0
        assert r["padding_values"] == "0"
        assert Fraction(r["load_measured_exact"]) == formula == Fraction(r["load_analytic_exact"])
        assert r["multicast_values"] + r["unicast_values"] == formula * r["m"] * r["N"]


def plan_values(args: list[str], K: int, rec: dict[str, Any]) -> tuple[int, int, int]:
    """(multicast values, unicast values, p2p bytes on the wire) of the plan for ``rec``'s
    Q and extra, computed here without MPI."""
    opts: dict[str, Any] = {"K": K}
    it = iter(args)
    for flag in it:
        opts[flag[2:].replace("-", "_")] = next(it)
    for key in ("q", "rows_per_batch", "n", "N", "T"):
        if key in opts:
            opts[key] = int(opts[key])
    job = load_job(None, {k: v for k, v in opts.items()
                          if k in ("scheme", "K", "q", "mu", "rows_per_batch", "n", "N", "T",
                                   "field")})
    pl = build_placement(job.params, job.load_assignment())
    plan = shuffle_plan(pl, MapEnd(tuple(rec["Q"]), tuple(rec["extra"])))
    size = 1 if rec["field"] == "gf2^8" else 2 if rec["field"] == "gf2^16" else 8
    wire = size * (sum(len(mc.receivers) * mc.length for mc in plan.multicasts)
                   + plan.unicast_values)
    return plan.multicast_values, plan.unicast_values, wire


@pytest.mark.mpi
@pytest.mark.slow  # 19 ranks, 3060 batches: paper-size
def test_k18_q12_job_verifies_with_the_analytic_load(tmp_path: Path) -> None:
    config, recs = launch(tmp_path, "k18", 18, [*K18, "--reps", "1"])
    assert config["batches"] == 3060 and config["m"] == 2040 and config["multicast"] == "p2p"
    check_analytic(recs, 18, 12, Fraction(1, 3))
    assert Fraction(recs[0]["load_measured_exact"]) == Fraction(181, 816)


@pytest.mark.mpi
@pytest.mark.slow  # 25 ranks: paper-size
@pytest.mark.parametrize("mode", ["p2p", "bcast"])
def test_k24_job_verifies_with_the_analytic_load(tmp_path: Path, mode: str) -> None:
    config, recs = launch(tmp_path, mode, 24, [*K24, "--reps", "2", "--multicast", mode])
    assert config["batches"] == 276 and config["multicast"] == mode
    check_analytic(recs, 24, 12, Fraction(1, 6))
    assert Fraction(recs[0]["load_measured_exact"]) == Fraction(175, 276)
    for r in recs:  # what p2p sends for this Q, whatever the transport
        mc, uc, wire = plan_values(K24, 24, r)
        assert (r["multicast_values"], r["unicast_values"], r["bytes_on_wire"]) == \
            (mc, uc, wire)
    # 253 groups a server over every Q (> BCAST_SETUP_GROUPS): the first shuffle creates
    # its Q's, each finisher C(11, 2) = 55 of them; p2p creates none
    made = recs[0]["server_groups_created"]
    assert set(made.values()) == ({55} if mode == "bcast" else {0})


SMALL = {
    "unified": ["--scheme", "unified", "--q", "4", "--mu", "1/2", "--rows-per-batch", "4",
                "--n", "16", "--N", "12", "--field", "gf2^8"],
    "bdc": ["--scheme", "bdc", "--q", "4", "--mu", "1/2", "--rows-per-batch", "4",
            "--n", "20", "--N", "12", "--T", "20"],
    "lt": ["--scheme", "lt", "--q", "4", "--mu", "1/2", "--rows-per-batch", "20",
           "--n", "12", "--N", "12", "--field", "gf2^8"],
}


@pytest.mark.mpi
@pytest.mark.parametrize("scheme", sorted(SMALL))
def test_bcast_sends_what_p2p_sends(tmp_path: Path, scheme: str) -> None:
    # distinct speeds: the same finishing order (hence Q) in both runs on a quiet machine
    cfg = tmp_path / "speeds.toml"
    cfg.write_text("speeds = [4.0, 2.9, 2.1, 1.5, 1.1, 0.8]\nt_row = 0.01\n")
    got = {}
    for mode in ("p2p", "bcast"):
        config, recs = launch(tmp_path, mode, 6, [*SMALL[scheme], "--reps", "2",
                                                  "--config", str(cfg), "--multicast", mode])
        assert config["multicast"] == mode and len(recs) == 2
        for r in recs:
            assert r["verified"] is True
            assert Fraction(r["load_measured_exact"]) == Fraction(r["load_plan_exact"])
            mc, uc, wire = plan_values(SMALL[scheme], 6, r)
            assert (r["multicast_values"], r["unicast_values"], r["bytes_on_wire"]) == \
                (mc, uc, wire)
            assert mc > 0
            # K = 6: every group of every Q was created at setup, none in a shuffle
            assert set(r["server_groups_created"].values()) == {0}
            assert all(v == 0.0 for v in r["server_groups_s"].values())
        got[mode] = {(tuple(r["Q"]), tuple(r["extra"])): (
            r["load_measured_exact"], r["multicast_values"], r["unicast_values"],
            r["bytes_on_wire"]) for r in recs}
    for key in set(got["p2p"]) & set(got["bcast"]):
        assert got["p2p"][key] == got["bcast"][key]


@pytest.mark.parametrize("args, rule", [
    (["--scheme", "sc", "--K", "6", "--q", "4", "--mu", "1/2", "--rows-per-batch", "2",
      "--n", "8", "--N", "12", "--multicast", "bcast"], "multicast: bcast needs coded multicast"),
    (["--scheme", "unified", "--K", "3", "--q", "2", "--mu", "1/2", "--rows-per-batch", "2",
      "--n", "8", "--N", "2", "--multicast", "bcast"], "multicast: bcast needs coded multicast"),
    (["--scheme", "unified", "--K", "6", "--q", "4", "--mu", "1/2", "--rows-per-batch", "2",
      "--n", "8", "--N", "12", "--multicast", "ring"], "multicast: must be one of p2p, bcast"),
])
def test_bad_multicast_is_one_line_exit_2(args: list[str], rule: str) -> None:
    r = run_cli(["run", "coded", *args])
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpi-coded: error: " + rule), r.stderr


def test_bcast_group_bound_is_checked() -> None:
    from mpi_coded.coded.job import BCAST_MAX_GROUPS, bcast_groups_per_server
    from mpi_coded.errors import ConfigError

    job = load_job(None, {"scheme": "unified", "K": 18, "q": 12, "mu": "1/3",
                          "rows_per_batch": 1, "n": 4, "N": 48, "multicast": "bcast"})
    assert bcast_groups_per_server(job.params) == 495 <= BCAST_MAX_GROUPS  # C(11,4)+C(11,3)
    with pytest.raises(ConfigError, match="group communicators per server"):
        load_job(None, {"scheme": "unified", "K": 20, "q": 18, "mu": "1/3",
                        "rows_per_batch": 1, "n": 4, "N": 18, "multicast": "bcast"})


def test_groups_over_every_q_decide_setup_creation() -> None:
    # sum_j C(K-1, j) over the plan's levels: K = 9, mu q = 2 (the network bench) and
    # K = 6 (the small bcast jobs) are created at setup, K = 24 and K = 18 in the shuffles
    from mpi_coded.coded.job import BCAST_SETUP_GROUPS, bcast_groups_any_q, multicast_levels

    def params(K, q, mu, scheme="unified"):
        return load_job(None, {"scheme": scheme, "K": K, "q": q, "mu": mu,
                               "rows_per_batch": 1, "n": 4, "N": 2 * q * K,
                               "multicast": "bcast"}).params

    p = params(9, 6, "1/3")
    assert multicast_levels(p) == (2,) and bcast_groups_any_q(p) == 28 <= BCAST_SETUP_GROUPS
    p = params(18, 12, "1/3")
    assert bcast_groups_any_q(p) == sum(math.comb(17, j) for j in multicast_levels(p))
    assert bcast_groups_any_q(p) > BCAST_SETUP_GROUPS
    p = params(24, 12, "1/6")
    assert bcast_groups_any_q(p) == 253 > BCAST_SETUP_GROUPS  # C(23, 2)
