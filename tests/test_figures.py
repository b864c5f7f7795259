"""scripts/figures.py: model curves beside real runs (tiny real jobs through mpiexec)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import ROOT, mpiexec_path, run_cmd

SCRIPT = str(ROOT / "scripts" / "figures.py")
PNGS = ("coded_vs_T.png", "coded_vs_K.png", "cec_steps.png")

pytest.importorskip("matplotlib", reason="matplotlib is not installed: no figures to draw")


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    if mpiexec_path() is None:
        pytest.skip("no mpiexec on PATH: install the 'local' extra (the mpich wheel)")
    base = tmp_path_factory.mktemp("figures")
    out, kept = base / "png", base / "results"
    r = run_cmd([sys.executable, SCRIPT, "--run", "--small", "--out", str(out),
                 "--keep-results", str(kept)], timeout=240)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return out, kept, json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.mpi
def test_small_run_draws_every_figure(small_run: tuple[Path, Path, dict]) -> None:
    out, kept, summary = small_run
    for name in PNGS:
        png = out / name
        assert png.is_file(), name
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert 20_000 < len(data) < 150_000, (name, len(data))
    # loads are exact on both sides: every measured bdc load is the model's at its Q
    for kind in ("coded_T", "coded_K"):
        for p in summary[kind]["points"]:
            assert p["load_measured_equals_model_at_Q"], p
            assert p["load_measured_unified"] == pytest.approx(p["load_model_unified"])
    assert len(summary["coded_T"]["points"]) >= 2
    assert [p["K"] for p in summary["coded_K"]["points"]] == sorted(
        {p["K"] for p in summary["coded_K"]["points"]})
    cec = summary["cec"]
    for pol in ("heterogeneous", "cyclic"):
        assert len(cec[pol]["model_s"]) == len(cec[pol]["measured_s"]) == 4
    # the seed's example: cyclic over heterogeneous plan time, integer rows of 420 per block
    assert cec["speedup_model"] == pytest.approx(0.2394 / 0.1936)


@pytest.mark.mpi
def test_redraw_from_results(small_run: tuple[Path, Path, dict], tmp_path: Path) -> None:
    _, kept, summary = small_run
    files = [str(kept / f) for f in ("coded_T.jsonl", "coded_K.jsonl", "cec.jsonl")]
    r = run_cmd([sys.executable, SCRIPT, "--results", *files, "--out", str(tmp_path)],
                timeout=120)
    assert r.returncode == 0, r.stderr
    for name in PNGS:
        assert (tmp_path / name).stat().st_size > 20_000
    again = json.loads(r.stdout.strip().splitlines()[-1])
    assert again["coded_T"]["points"] == summary["coded_T"]["points"]


def test_missing_results_file_is_one_line_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    r = run_cmd([sys.executable, SCRIPT, "--results", str(missing), "--out", str(tmp_path)],
                timeout=60)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(missing) in lines[0], r.stderr
    assert lines[0].startswith("figures.py: error:")
    assert not list(tmp_path.glob("*.png"))


def test_results_without_usable_lines_is_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "summary"}\n')
    r = run_cmd([sys.executable, SCRIPT, "--results", str(bad), "--out", str(tmp_path)],
                timeout=60)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    garbled = tmp_path / "garbled.jsonl"
    garbled.write_text("not json\n")
    r = run_cmd([sys.executable, SCRIPT, "--results", str(garbled), "--out", str(tmp_path)],
                timeout=60)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_bench_outputs_are_drawn(tmp_path: Path) -> None:
    """--rs-bench and --paper-bench draw the RS figures from the benches' last JSON lines."""
    paper = {"cores": 2, "paper": {
        str(T): {"encode_s": e, "model_encode_s": e * 0.8, "reduce_s": r,
                 "model_reduce_s": r * 0.7}
        for T, e, r in ((1, 0.9, 0.6), (10, 0.8, 0.5), (1000, 0.3, 0.25))},
        "bdc_over_unified_measured": {"10": 0.87, "1000": 0.37},
        "bdc_over_unified_model": {"10": 0.9, "1000": 0.4}}
    src = tmp_path / "paper.txt"
    src.write_text("progress line\n" + json.dumps(paper) + "\n")
    r = run_cmd([sys.executable, SCRIPT, "--paper-bench", str(src), "--out",
                 str(tmp_path / "png")], timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    for name in ("rs_paper_phases.png", "rs_bdc_vs_T_paper.png"):
        assert (tmp_path / "png" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = tmp_path / "bad.txt"
    bad.write_text(json.dumps({"bdc_over_unified_measured": {}}) + "\n")
    r = run_cmd([sys.executable, SCRIPT, "--paper-bench", str(bad), "--out",
                 str(tmp_path / "png")], timeout=120)
    assert r.returncode != 0 and "bench_paper.py" in r.stderr
