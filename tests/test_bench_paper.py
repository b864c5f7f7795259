"""scripts/bench_paper.py without MPI: its invocations set side by side as independent runs
(``--merge``), the load-normalized ratio by hand, the fitted model carried to the paper's
size (``--fit``)."""

from __future__ import annotations

import json
import statistics
import sys

import pytest

from conftest import ROOT, load_script, run_cmd

SCRIPT = ROOT / "scripts" / "bench_paper.py"


@pytest.fixture(scope="module")
def bp():
    return load_script(SCRIPT, "bench_paper_script")


def _job(T: int, started: str, reps: list[tuple[float, float, float]], model: float) -> dict:
    e = statistics.median(r[0] for r in reps)
    red = statistics.median(r[2] for r in reps)
    return {"kind": "paper_bench", "T": T, "scheme": "unified" if T == 1 else "bdc",
            "run_started": started, "verified": True, "rep_phases": [list(r) for r in reps],
            "encode_s": e, "reduce_s": red, "model_encode_s": model, "model_reduce_s": model,
            "fitted_model_encode_s": min(1.0, 2 * model), "fitted_model_reduce_s": 0.0}


def _three_runs() -> list[dict]:
    lines = []
    for i, slow in enumerate((1.0, 1.5, 1.1)):  # runs 2 and 3 on a busier machine ...
        s = f"2026-12-01T1{i}:00:00Z"
        lines.append(_job(1, s, [(1.0 * slow, 20 * slow, 0.5 * slow)] * 3, 1.0))
        lines.append(_job(10, s, [(0.6 * slow, 20 * slow, 0.3 * slow)] * 3, 0.5))
        lines.append(_job(100, s, [(0.3, 20, 0.15)] * 3, 0.25))  # ... but not for T = 100
    return lines


def test_an_invocation_is_one_run_of_the_summary(bp) -> None:
    lines = _three_runs()
    run = bp.run_of(lines[3:6])
    assert run["ratio_measured"]["10"] == pytest.approx(0.6)
    assert run["ratio_model"]["10"] == pytest.approx(0.5)  # the table model's
    assert run["ratio_fitted_model"] == pytest.approx({"10": 1.0, "100": 0.5})
    # run 2: T = 100 ran in a quiet minute (map 20 s), unified in a busy one (30 s): as
    # measured 0.45 / 2.25; each repetition at the run's median map (30 s), T = 100's
    # 0.45 s counts 0.45 x 30/20 and unified's 2.25 x 30/30, the ratio of the work: 0.3
    assert run["ratio_measured"]["100"] == pytest.approx(0.45 / 2.25)
    assert run["reps_normalized"]["100"] == pytest.approx([0.675] * 3)
    assert run["reps_normalized"]["1"] == pytest.approx([2.25] * 3)
    assert run["ratio_measured_normalized"] == pytest.approx({"10": 0.6, "100": 0.3})


def test_merge_prints_the_runs_medians_and_spread(bp, tmp_path, capsys) -> None:
    f = tmp_path / "paper.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in _three_runs()))
    assert bp.merge([str(f)]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    per = out["paper_summary"]["per_T"]
    assert per["10"]["runs"] == 3
    assert per["10"]["measured"]["median"] == pytest.approx(0.6)
    assert per["10"]["comparable"] and per["10"]["within"]  # 0.5 / 0.6: within 20%
    assert per["100"]["measured_per_run"] == pytest.approx([0.3, 0.45 / 2.25, 0.45 / 1.65])
    assert per["100"]["model"]["median"] == pytest.approx(0.25)
    fit = out["paper_summary_fitted"]["per_T"]
    assert fit["10"]["model"]["median"] == pytest.approx(1.0)
    assert not fit["100"]["within"]  # 0.5 against a measured 0.27
    norm = out["paper_summary_normalized"]["per_T"]["100"]
    assert norm["measured_per_run"] == pytest.approx([0.3, 0.3, 0.3])
    assert norm["model_over_measured"] == pytest.approx(0.25 / 0.3)
    assert "paper_summary_normalized_fitted" in out


def test_merge_without_paper_lines_is_one_error(tmp_path) -> None:
    f = tmp_path / "empty.jsonl"
    f.write_text('{"kind": "other"}\n')
    r = run_cmd([sys.executable, str(SCRIPT), "--merge", str(f)], timeout=120)
    assert r.returncode != 0 and "no paper_bench lines" in r.stderr


def test_the_fit_carried_to_the_paper_size(bp, tmp_path) -> None:
    fits = [{"theta": {"fft_encode": t, "fft_decode": 1.0, "product": 1.0, "scalar": 1.0,
                       "python": 1.0}, "map": 1.0, "overhead_s": 0.0, "cores": 2}
            for t in (0.5, 1.0, 4.0)]
    f = tmp_path / "runs.jsonl"
    f.write_text("".join(json.dumps({"kind": "scaled_run", "run": i, "started": str(i),
                                     "scaled_m": 1800, "fit": d}) + "\n"
                         for i, d in enumerate(fits)))
    model = bp.read_fit([str(f)])
    assert model.theta["fft_encode"] == 1.0
    row = {"T": 1}
    bp.add_fitted(row, model, None)
    slow = {"T": 1}
    bp.add_fitted(slow, bp.calibration.median_model(
        [bp.calibration.FittedModel.from_dict({**fits[2], "theta": {"fft_encode": 4.0}})]),
        None)
    # unified's encode is the RS FFT encoder's: 4x its multiplier, 4x its seconds (bar the
    # small other work)
    assert 3.5 < slow["fitted_model_encode_s"] / row["fitted_model_encode_s"] <= 4.0
    assert slow["fitted_model_reduce_s"] == pytest.approx(row["fitted_model_reduce_s"])
