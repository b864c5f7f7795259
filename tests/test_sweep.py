"""scripts/sweep.py (local, through mpiexec; its logic: :mod:`mpi_coded.cluster.sweep`)
and scripts/plot_results.py."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, SMALL_CEC_TOML, mpiexec_path, processes_matching, run_cmd
from mpi_coded import results
from mpi_coded.cluster import sweep

GRID = ["--grid", "cols=50,100,200", "--grid", "policy=heterogeneous,cyclic", "--grid", "t_row=0"]
POINTS = [{"cols": c, "policy": p, "t_row": 0}
          for c, p in itertools.product([50, 100, 200], ["heterogeneous", "cyclic"])]


def read_jsonl(path: Path) -> list[dict]:
    return results.read_results(path)


def by_run(lines: list[dict]) -> dict[int, list[dict]]:
    runs: dict[int, list[dict]] = {}
    for rec in lines:
        runs.setdefault(rec["run"], []).append(rec)
    return runs


def check_sweep_file(path: Path, via: str, points: list[dict], reps: int = 1) -> None:
    """Shared with tests/test_slurm.py: every run present, verified and annotated."""
    lines = read_jsonl(path)
    assert all(rec["via"] == via for rec in lines)
    assert len({rec["sweep_id"] for rec in lines}) == 1
    runs = by_run(lines)
    assert sorted(runs) == list(range(len(points) * reps))
    seen = []
    for recs in runs.values():
        kinds = [r["kind"] for r in recs]
        assert "run_failed" not in kinds, recs[-1]
        assert kinds[0] == "config" and kinds[-1] == "summary" and kinds.count("step") == 4
        params = recs[0]["params"]
        seen.append((json.dumps(params, sort_keys=True), recs[0]["rep"]))
        for r in recs:  # parameters, versions and host on every line
            assert r["params"] == params and r["host"] == recs[0]["host"] != ""
            assert r["versions"]["mpi_coded"] and r["versions"]["python"]
            assert r["versions"]["mpi"] and r["versions"]["numpy"]
        cfg = recs[0]
        # the swept values reached the job: config keys via the TOML, policy via the flag
        assert cfg["cols"] == params["cols"] and cfg["policy"] == params["policy"]
        assert cfg["t_row"] == params["t_row"] == 0
        assert all(r["verified"] is True for r in recs if r["kind"] == "step")
        assert recs[-1]["all_verified"] is True
    expected = [(json.dumps(p, sort_keys=True), rep) for p in points for rep in range(reps)]
    assert sorted(seen) == sorted(expected)


def check_png(path: Path) -> None:
    assert path.is_file() and path.stat().st_size > 5000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image

    img = matplotlib.image.imread(str(path))
    assert img.shape[0] > 200 and img.shape[1] > 300
    assert float(img[..., :3].std()) > 0.01  # not a blank canvas


def needs_matplotlib() -> None:
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("matplotlib is not installed (pip install -e '.[plot]'): no plot test")


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory):
    if mpiexec_path() is None:
        pytest.skip("no mpiexec on PATH: install the 'local' extra (the mpich wheel)")
    tmp = tmp_path_factory.mktemp("sweep")
    out = tmp / "sweep.jsonl"
    base = tmp / "base.toml"
    base.write_text(SMALL_CEC_TOML)
    r = run_cmd([sys.executable, "scripts/sweep.py", *GRID, "--config", str(base), "--out",
                 str(out), "--timeout", "120"], timeout=300)
    return r, out


@pytest.mark.mpi
def test_local_sweep_3x2_grid_one_results_file(local_sweep):
    r, out = local_sweep
    assert r.returncode == 0, r.stdout + r.stderr
    assert "6/6 runs verified" in r.stdout
    check_sweep_file(out, "local", POINTS)
    assert not list(out.parent.glob(".sweep-*")), "per-run work files left behind"


@pytest.mark.mpi
def test_plot_of_the_local_sweep(local_sweep, tmp_path):
    needs_matplotlib()
    r, out = local_sweep
    assert r.returncode == 0, r.stdout + r.stderr
    png = tmp_path / "total.png"
    p = run_cmd([sys.executable, "scripts/plot_results.py", str(out), "--out", str(png)],
                timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    check_png(png)
    # the table: one row per (policy, cols), x = cols (the first swept key)
    rows = [ln for ln in p.stdout.splitlines() if ln.startswith("policy=")]
    assert len(rows) == 6
    # step wall_s, categorical x (policy), one line per cols value
    png2 = tmp_path / "steps.png"
    p = run_cmd([sys.executable, "scripts/plot_results.py", str(out), "--out", str(png2),
                 "--metric", "wall_s", "--x", "policy"], timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    check_png(png2)
    assert len([ln for ln in p.stdout.splitlines() if ln.startswith("cols=")]) == 6


def test_plot_rejects_a_file_without_sweep_runs(tmp_path):
    f = tmp_path / "plain.jsonl"
    f.write_text('{"kind": "summary", "total_wall_s": 1.0}\n')
    p = run_cmd([sys.executable, "scripts/plot_results.py", str(f)], timeout=60)
    assert p.returncode == 1 and "no successful sweep runs" in p.stderr


@pytest.mark.mpi
def test_sweep_timeout_kills_the_whole_process_group(tmp_path):
    if mpiexec_path() is None:
        pytest.skip("no mpiexec on PATH: install the 'local' extra (the mpich wheel)")
    out = tmp_path / "slow.jsonl"
    # t_row = 0.05: the seed schedule would take ~48 s; the run gets 3 s
    r = run_cmd([sys.executable, "scripts/sweep.py", "--grid", "t_row=0.05", "--out", str(out),
                 "--timeout", "3"], timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAILED: timed out" in r.stdout
    failed = [x for x in read_jsonl(out) if x["kind"] == "run_failed"]
    assert len(failed) == 1 and failed[0]["reason"] == "timed out"
    assert failed[0]["params"] == {"t_row": 0.05}
    # mpiexec, hydra proxies and ranks all gone; rank 0's watcher (its own session, by
    # design) ends a moment later, once it has written the killed run's last line
    end = time.monotonic() + 15
    while (leftovers := processes_matching(str(tmp_path), exclude=os.getpid())) and \
            time.monotonic() < end:
        time.sleep(0.1)
    assert leftovers == []


@pytest.mark.parametrize("args, message", [
    (["--grid", "nonsense=1,2"], "unknown key"),
    (["--grid", "policy"], "must be KEY=V1,V2"),
    (["--grid", "policy=fastest"], "policy"),
    (["--grid", "L=9"], "L"),
    (["--grid", "t_row=0", "--grid", "t_row=1"], "given twice"),
])
def test_bad_grid_fails_before_any_launch(tmp_path, args, message):
    out = tmp_path / "never.jsonl"
    r = run_cmd([sys.executable, "scripts/sweep.py", *args, "--out", str(out)], timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith("sweep: error:") and message in r.stderr
    assert not out.exists()


def test_grid_values_split_outside_brackets_and_parse_as_json():
    assert sweep.split_values("[1,1,2],[2,2,2]") == ["[1,1,2]", "[2,2,2]"]
    assert sweep.parse_grid(["speeds=[1,1,2],[2,2,2]", "field=gf2^8,float64", "t-row=0,1e-3"]) \
        == {"speeds": [[1, 1, 2], [2, 2, 2]], "field": ["gf2^8", "float64"], "t_row": [0, 0.001]}
    assert len(sweep.points({"a": [1, 2, 3], "b": ["x", "y"]})) == 6


def test_config_keys_go_into_a_toml_the_job_accepts(tmp_path):
    from mpi_coded.cec.config import load_config

    base = ROOT / "configs" / "random_preemption.toml"
    args, world = sweep.job_args({"cols": 64, "availability.p": 0.1, "policy": "cyclic",
                                  "seed": 3}, base, tmp_path, 0)
    assert world == 16
    assert args[:2] == ["run", "cec"] and args[-4:] == ["--policy", "cyclic", "--seed", "3"]
    cfg = load_config(args[args.index("--config") + 1])
    assert (cfg.cols, cfg.availability.p, cfg.N, cfg.rows) == (64, 0.1, 15, 3000)
    args, world = sweep.job_args({"N": 3, "L": 2}, None, tmp_path, 1)
    assert world == 4


def test_runs_interleave_the_repetitions_and_read_back_torn_files(tmp_path):
    grid = sweep.parse_grid(["cols=50,100", "policy=cyclic"])
    pts, runs = sweep.plan_runs(grid, 2, None, tmp_path)
    assert pts == [{"cols": 50, "policy": "cyclic"}, {"cols": 100, "policy": "cyclic"}]
    assert [(r.run, r.rep, r.params["cols"]) for r in runs] == [
        (0, 0, 50), (1, 0, 100), (2, 1, 50), (3, 1, 100)]
    assert all(r.world == runs[0].world and r.args[:2] == ["run", "cec"] for r in runs)
    f = tmp_path / "run.jsonl"
    f.write_text('{"kind": "config", "job": "cec"}\n[1, 2]\n{"kind": "st')
    assert sweep.read_run(f) == [{"kind": "config", "job": "cec"},
                                 {"kind": "unreadable", "text": "[1, 2]"}]
    assert sweep.read_run(tmp_path / "none.jsonl") == []
    assert set(sweep.LAUNCHERS) == {"local", "slurm"}
