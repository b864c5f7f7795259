"""A block repaired from peers across emulated hosts (root; docs/storage.md (S.3)):
``scripts/bench_repair.py`` once, small: host 1 holds no block, its spare rank rebuilds
machine 4's from the three machines on the other hosts, the L blocks cross host 1's link
(its counters), and the job verifies."""

from __future__ import annotations

import json
import os
import sys

import pytest
from test_multihost import _need_namespaces

from conftest import ROOT, run_cmd

pytestmark = [pytest.mark.mpi, pytest.mark.multihost]


def test_a_block_is_repaired_from_peers_across_hosts() -> None:
    _need_namespaces()
    name = f"rp{os.getpid() % 10000:04d}"
    r = run_cmd([sys.executable, str(ROOT / "scripts" / "bench_repair.py"), "--runs", "1",
                 "--mib", "0.5", "--rate", "1gbit", "--name", name], timeout=400)
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["all_verified"]
    assert out["repair_bytes"] == 3 * out["block_bytes"]  # L blocks
    assert out["host1_received"][0] >= out["repair_bytes"]  # they crossed host 1's link


def test_a_lost_host_costs_a_relaunch_not_the_job() -> None:
    """``scripts/bench_survival.py`` once per failure of a whole host (killed with its
    daemon; its link down for good): the job from the store is relaunched on the hosts
    left and resumed, no hang, every step verified once, none lost, no byte re-sent."""
    _need_namespaces()
    name = f"sv{os.getpid() % 10000:04d}"
    r = run_cmd([sys.executable, str(ROOT / "scripts" / "bench_survival.py"), "--runs", "1",
                 "--cases", "host,link", "--steps", "16", "--name", name], timeout=500)
    assert r.returncode == 0, r.stdout + r.stderr
    matrix = json.loads(r.stdout.strip().splitlines()[-1])["matrix"]
    for case in ("host", "link"):
        m = matrix[case]
        assert m["hangs"] == 0 and m["failed"] == 0, (case, m, r.stderr)
        assert m["unverified"] == 0 and m["lost"] == 0 and m["repeated"] == 0, (case, m)
        assert m["bytes_resent"] == 0 and m["relaunch_p50_s"] is not None, (case, m)
