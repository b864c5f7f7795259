"""The elastic job from a coded store, under mpiexec: blocks read from disk, the master
without X, fewer ranks than N + 1, repair from peers, bad storage, and iterative jobs
resumed from their saved state (docs/storage.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli, run_mpi

pytestmark = pytest.mark.mpi

SMALL = """job = "cec"
N = 5
L = 3
rows = 60
cols = 12
t_row = 0.0001
speeds = [1, 1, 2, 2, 1]
[availability]
schedule = [[1, 2, 3, 4, 5], [1, 2, 4, 5], [2, 3, 4], [1, 3, 5]]
"""


def small(extra: str = "") -> str:
    """SMALL with ``extra`` top-level keys (before its [availability] table)."""
    return SMALL.replace("[availability]", extra + "[availability]")


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def write(tmp_path: Path, toml: str, *extra: str) -> tuple[Path, Path]:
    cfg = tmp_path / "job.toml"
    cfg.write_text(toml)
    store = tmp_path / "store"
    r = run_cli(["store", "write", "--config", str(cfg), "--out", str(store), *extra])
    assert r.returncode == 0, r.stderr
    return cfg, store


def run(n: int, cfg: Path, store: Path, out: Path, *extra: str, timeout: float = 120):
    return run_mpi(n, ["run", "cec", "--config", str(cfg), "--store", str(store), "--out",
                       str(out), "--timeout", "20", *extra], timeout=timeout)


def steps(out: Path) -> list[dict]:
    return [x for x in lines(out) if x["kind"] == "step"]


def test_from_a_store_fewer_ranks_and_a_repair(tmp_path: Path) -> None:
    """One store, two runs: two machines without a rank (lost, the job goes on); then all
    ranks, with machine 2's block deleted and a corrupt block 4: the spare rank repairs 2
    and rank 4 rebuilds 4 from L peers, both on disk again with their checksums, the
    master sends nothing and the sketch checks every step, every step verified."""
    cfg, store = write(tmp_path, small('field = "gf2^8"\n'))
    out = tmp_path / "b.jsonl"
    r = run(4, cfg, store, out)
    assert r.returncode == 0, r.stderr
    summary = lines(out)[-1]
    assert summary["all_verified"] and [e["machine"] for e in summary["lost"]] == [4, 5]
    assert all(set(x["available"]) <= {1, 2, 3} for x in steps(out))

    (store / "block-2.npy").unlink()
    raw = bytearray((store / "block-4.npy").read_bytes())
    raw[-1] ^= 0x5A
    (store / "block-4.npy").write_bytes(bytes(raw))
    out = tmp_path / "c.jsonl"
    r = run(6, cfg, store, out)
    assert r.returncode == 0, r.stderr
    assert "block-2.npy: missing" in r.stderr and "block-4.npy: checksum" in r.stderr
    rec = next(x for x in lines(out) if x["kind"] == "setup")["store"]
    assert sorted(x["machine"] for x in rec["repairs"]) == [2, 4]
    setup = next(x for x in lines(out) if x["kind"] == "setup")
    assert setup["setup_bytes"] == 0 and setup["store"]["lost"] == []
    assert "against the store's sketch" in r.stdout
    assert [x["verified"] for x in steps(out)] == [True] * 4
    for x in rec["repairs"]:
        assert len(x["sources"]) == 3 and x["bytes"] == 3 * 20 * 12  # L blocks of uint8
    assert lines(out)[-1]["all_verified"]
    ok = run_cli(["store", "check", "--config", str(cfg), "--store", str(store)])
    assert ok.returncode == 0, ok.stderr  # the repaired blocks match the manifest (GF: exact)
    assert json.loads(ok.stdout)["verified"] == [1, 2, 3, 4, 5]


def test_exact_check_streams_x_and_a_wrong_store_never_verifies(tmp_path: Path) -> None:
    """With data and verify = exact, the master streams X and checks each product exactly
    (the default is the sketch: below); a store of another
    data set is refused in one line; a store whose blocks are of another X but whose
    manifest is intact is caught by the check (not verified, exit 1)."""
    x = np.random.default_rng(3).standard_normal((60, 12))
    np.save(tmp_path / "x.npy", x)
    cfg, store = write(tmp_path, small(f'data = "{tmp_path / "x.npy"}"\n'))
    out = tmp_path / "a.jsonl"
    r = run(6, cfg, store, out, "--verify", "exact")
    assert r.returncode == 0, r.stderr
    assert "every product checked exactly" in r.stdout
    exact = steps(out)
    r = run(6, cfg, store, tmp_path / "default.jsonl")  # auto: the sketch, X not read
    assert r.returncode == 0, r.stderr
    assert "against the store's sketch" in r.stdout
    for line in (*exact, *steps(tmp_path / "default.jsonl")):  # the check's time, counted
        assert 0 < line["verify_s"] < line["wall_s"] + line["master_s"]
    assert all(x["verified"] for x in steps(out))

    np.save(tmp_path / "x.npy", x + 1.0)  # X changed after the store was written
    r = run(6, cfg, store, tmp_path / "b.jsonl", "--verify", "exact")
    assert r.returncode != 0
    assert "hash differs from the store's data set" in r.stderr
    assert "Traceback" not in r.stderr

    # the manifest's checksums rewritten to fit blocks of another X: the sketch catches it
    other = tmp_path / "other"
    np.save(tmp_path / "y.npy", x * 2.0)
    r0 = run_cli(["store", "write", "--config", str(cfg), "--data", str(tmp_path / "y.npy"),
                  "--out", str(other)])
    assert r0.returncode == 0, r0.stderr
    man = json.loads((store / "manifest.json").read_text())
    theirs = json.loads((other / "manifest.json").read_text())
    for n in range(1, 6):
        os.replace(other / f"block-{n}.npy", store / f"block-{n}.npy")
    man["blocks"] = theirs["blocks"]
    (store / "manifest.json").write_text(json.dumps(man))
    out = tmp_path / "c.jsonl"
    r = run(6, cfg, store, out, "--verify", "sketch")
    assert r.returncode == 1, r.stderr
    assert not any(x["verified"] for x in steps(out))
    assert lines(out)[-1]["all_verified"] is False


def test_a_store_of_another_job_is_refused_before_traffic(tmp_path: Path) -> None:
    cfg, store = write(tmp_path, SMALL)
    other = tmp_path / "other.toml"
    other.write_text(SMALL.replace("L = 3", "L = 2"))
    r = run_mpi(6, ["run", "cec", "--config", str(other), "--store", str(store), "--out",
                    str(tmp_path / "r.jsonl"), "--timeout", "20"], timeout=120)
    assert r.returncode != 0
    assert "manifest.json: the store holds L = 3, the job has L = 2" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("workload, rows", [("power", 24), ("linreg", 36)])
def test_resumed_iterative_job_equals_an_uninterrupted_one(tmp_path: Path, workload: str,
                                                           rows: int) -> None:
    """A job killed at step 4, resumed from its saved state (and from the store, on fewer
    ranks): every step's eigenvalue or residual equals the uninterrupted run's to 1e-12,
    and so does the final w (the saved states)."""
    toml = (small(f'workload = "{workload}"\n').replace("rows = 60", f"rows = {rows}")
            .replace("cols = 12", "cols = 24")).replace(
        "schedule = [[1, 2, 3, 4, 5], [1, 2, 4, 5], [2, 3, 4], [1, 3, 5]]",
        "schedule = [[1, 2, 3, 4, 5], [1, 2, 4, 5], [2, 3, 4], [1, 3, 5], [1, 2, 3], "
        "[3, 4, 5]]")
    cfg, store = write(tmp_path, toml)
    key = "eigenvalue" if workload == "power" else "residual"
    clean = tmp_path / "clean.jsonl"
    r = run(6, cfg, store, clean)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "r.jsonl"
    r = run(6, cfg, store, out, "--fault", "kill:3:step@4")
    assert r.returncode != 0
    assert [x["step"] for x in steps(out)] == [1, 2, 3]
    r = run(5, cfg, store, out, "--resume")  # machine 5 has no rank now
    assert r.returncode == 0, r.stderr
    assert "resuming: the state after step 3" in r.stdout
    got, want = steps(out), steps(clean)
    assert [x["step"] for x in got] == [1, 2, 3, 4, 5, 6]
    for a, b in zip(got, want):
        assert a["verified"] and abs(a[key] - b[key]) <= 1e-12 * max(1.0, abs(b[key]))
    w1 = np.load(str(clean) + ".state.npz")["w"]
    w2 = np.load(str(out) + ".state.npz")["w"]
    np.testing.assert_allclose(w2, w1, rtol=0, atol=1e-12)
