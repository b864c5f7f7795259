"""``mpi-coded report`` as a person sees it, and ``mpi_coded.results.frame``.

The README's two example jobs (the elastic seed example and a small coded job) and a small
sweep run once per module under mpiexec; with the paper-size run kept in
``docs/runs/paper_size.jsonl`` (and the calibration measured beside it) they make one
page, which headless Chromium opens from disk: no script or console error, every image
loaded (natural width > 0), the tables show the numbers of the results files.  A file that
is not a results file is one line naming the file and line, exit 2, and no page.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, SMALL_CEC_TOML, mpiexec_path, run_cli, run_cmd, run_mpi

PAPER = ROOT / "docs" / "runs" / "paper_size.jsonl"
CALIBRATION = ROOT / "docs" / "runs" / "calibration.json"
CODED_ARGS = ["run", "coded", "--scheme", "bdc", "--T", "2", "--K", "6", "--q", "4", "--mu",
              "1/2", "--rows-per-batch", "4", "--n", "30", "--N", "12", "--reps", "2"]


def needs(module: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[{extra}]')")


def chromium() -> str:
    """The headless browser; under CI=true its absence FAILS (.ci/run installs it)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        exe = shutil.which(name)
        if exe is not None:
            return exe
    why = "chromium is not installed (apt-get install --no-install-recommends chromium)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true: {why}; .ci/run installs it")
    pytest.skip(why)


def open_in_chromium(page: Path) -> tuple[dict[str, Any], str]:
    """The page's status object (:func:`mpi_coded.report.status_of`) and its DOM after
    load, from ``chromium --headless --dump-dom``."""
    from mpi_coded.report import status_of

    r = run_cmd([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                 "--virtual-time-budget=10000", "--dump-dom", page.resolve().as_uri()],
                timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    status = status_of(r.stdout)
    assert status is not None, "the page's status script did not run:\n" + r.stdout[-2000:]
    return status, r.stdout


class Tables(HTMLParser):
    """Every ``<table data-kind=...>``: its rows as ``{data-key: text}`` and the row's class."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[tuple[str, dict[str, str]]]] = {}
        self._kind: str | None = None
        self._row: dict[str, str] | None = None
        self._cls = ""
        self._key: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self._kind = a.get("data-kind") or ""
            self.tables.setdefault(self._kind, [])
        elif tag == "tr" and self._kind is not None:
            self._row, self._cls = {}, a.get("class") or ""
        elif tag == "td" and self._row is not None:
            self._key = a.get("data-key")
            self._row[self._key or ""] = ""

    def handle_data(self, data: str) -> None:
        if self._row is not None and self._key is not None:
            self._row[self._key] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._key = None
        elif tag == "tr" and self._row is not None and self._kind is not None:
            if self._row:
                self.tables[self._kind].append((self._cls, self._row))
            self._row = None
        elif tag == "table":
            self._kind = None


def shown(text: str, value: float) -> bool:
    """A table cell shows ``value`` (to its 4 significant digits)."""
    return math.isclose(float(text), float(value), rel_tol=1e-3, abs_tol=1e-12)


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The README's elastic seed example, a small coded job and a two-point sweep."""
    if mpiexec_path() is None:
        pytest.skip("no mpiexec on PATH: install the 'local' extra (the mpich wheel)")
    d = tmp_path_factory.mktemp("report")
    files = {"cec": d / "cec.jsonl", "coded": d / "coded.jsonl", "sweep": d / "sweep.jsonl"}
    r = run_mpi(7, ["run", "cec", "--out", str(files["cec"])], timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    r = run_mpi(7, [*CODED_ARGS, "--out", str(files["coded"])], timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    base = d / "base.toml"  # the sweep's job: small (the report reads the sweep, not the job)
    base.write_text(SMALL_CEC_TOML)
    r = run_cmd([sys.executable, "scripts/sweep.py", "--grid", "t_row=0,0.0005", "--config",
                 str(base), "--out", str(files["sweep"]), "--timeout", "120"], timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return files


@pytest.fixture(scope="module")
def page(examples: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
         ) -> tuple[Path, str]:
    needs("matplotlib", "report")
    out = tmp_path_factory.mktemp("page")
    files = [str(examples["cec"]), str(examples["coded"]), str(examples["sweep"]), str(PAPER)]
    r = run_cli(["report", *files, "--calibration", str(CALIBRATION), "--out", str(out)],
                timeout=180)
    assert r.returncode == 0, r.stderr
    progress = [ln for ln in r.stderr.splitlines() if ln.startswith("report: [")]
    assert len(progress) == len(files), r.stderr  # one progress line per file
    assert "everything verified" in r.stdout, r.stdout
    return out / "report.html", r.stdout


@pytest.mark.mpi
def test_the_page_opens_in_chromium_with_every_figure_and_the_numbers(
        page: tuple[Path, str], examples: dict[str, Path]) -> None:
    from mpi_coded import results

    path, _ = page
    text = path.read_text()
    assert "http://" not in text and "https://" not in text  # nothing to fetch
    status, dom = open_in_chromium(path)
    assert status["errors"] == []
    images = status["images"]
    # elastic: steps, waste; coded (2 paper-size jobs + the small one): phases, loads;
    # sweep: one figure per swept parameter (t_row)
    assert len(images) == 2 + 3 * 2 + 1, images
    assert all(img["naturalWidth"] > 0 for img in images), images
    tables = Tables()
    tables.feed(dom)
    t = tables.tables
    # elastic steps: every step line's numbers
    steps = results.views(results.read_results(examples["cec"]), results.ElasticStep)
    rows = [row for _, row in t["cec-step"]]
    assert [int(r["step"]) for r in rows] == [s.step for s in steps] == [1, 2, 3, 4]
    for s, row in zip(steps, rows):
        assert shown(row["wall_s"], s.wall_s) and shown(row["predicted_s"], s.predicted_s)
        assert row["transition_waste"] == s.transition_waste and row["verified"] == "yes"
        assert row["available"] == ",".join(map(str, s.available))
    # coded repetitions (the small job and the paper-size runs): phases, load, Q
    runs = [r for f in (examples["coded"], PAPER)
            for r in results.views(results.read_results(f), results.CodedRun)]
    shown_runs = [row for cls, row in t["coded-run"] if cls != "model"]
    assert len(shown_runs) == len(runs) == 6
    for r, row in zip(runs, shown_runs):
        for key in ("encode_s", "map_s", "shuffle_s", "reduce_s", "total_s",
                    "load_measured", "load_analytic"):
            assert shown(row[key], getattr(r, key)), (key, row)
        assert row["Q"] == ",".join(map(str, r.Q)) and row["decoder"] == r.decoder
    # the calibrated model beside each job: predict_seconds at the job's parameters
    from mpi_coded.analysis import calibration
    from mpi_coded.coded.schemes import coded_params

    models = [row for cls, row in t["coded-run"] if cls == "model"]
    assert len(models) == 3
    c = results.coded_jobs(results.read_results(PAPER))[0].config
    p = coded_params(c.scheme, c.K, c.q, c.mu, c.rows_per_batch, c.n, c.N, c.T, c.field)
    want = calibration.predict_seconds(p, calibration.load(str(CALIBRATION)),
                                       cores=c.run.cores if c.run else None).wall.to_dict()
    assert all(shown(models[1][f"{ph}_s"], want[ph]) for ph in ("encode", "map", "reduce"))
    # the sweep's runs and the run records
    sweep = results.sweep_runs(results.read_results(examples["sweep"]))
    srows = [row for _, row in t["sweep-run"]]
    assert [row["p:t_row"] for row in srows] == [str(r.params["t_row"]) for r in sweep]
    assert all(shown(row["total_wall_s"], r.summary["total_wall_s"])
               for row, r in zip(srows, sweep) if r.summary)
    cfg = results.elastic_jobs(results.read_results(examples["cec"]))[0].config
    rec = [row for _, row in t["records"] if row["file"] == str(examples["cec"])][0]
    assert cfg.run is not None
    assert rec["host"] == cfg.run.host and rec["mpi"] == cfg.run.mpi
    assert not [cls for rows_ in t.values() for cls, _ in rows_ if cls == "bad"]


def test_the_status_script_sees_a_broken_image_and_a_script_error(tmp_path: Path) -> None:
    """The check above can fail: a page with an image that does not decode and a throwing
    script reports both."""
    from mpi_coded.report import html as H

    path = tmp_path / "broken.html"
    path.write_text(H.page("broken", [H.img("data:image/png;base64,AAAA", "broken"),
                                      "<script>console.error('bad'); undefinedCall();</script>"]))
    status, _ = open_in_chromium(path)
    assert [img["naturalWidth"] for img in status["images"]] == [0]
    assert any("console: bad" in e for e in status["errors"]), status
    assert any("undefinedCall" in e for e in status["errors"]), status


@pytest.mark.mpi
def test_an_unverified_repetition_stands_out(examples: dict[str, Path], tmp_path: Path
                                             ) -> None:
    needs("matplotlib", "report")
    lines = examples["coded"].read_text().splitlines()
    recs = [json.loads(ln) for ln in lines]
    for r in recs:
        if r["kind"] == "run" and r["rep"] == 1:
            r["verified"] = False
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in recs))
    r = run_cli(["report", str(bad), "--out", str(tmp_path / "out"), "--quiet"])
    assert r.returncode == 0 and "1 problem(s)" in r.stdout, r.stdout + r.stderr
    tables = Tables()
    tables.feed((tmp_path / "out" / "report.html").read_text())
    classes = [cls for cls, _ in tables.tables["coded-run"]]
    assert classes == ["", "bad"]
    assert "repetition 1 did not verify" in (tmp_path / "out" / "report.html").read_text()
    # a sweep run that failed: its summary replaced by the run_failed line sweep.py writes
    from mpi_coded import results

    out = []
    for rec in results.read_results(examples["sweep"]):
        if rec["run"] == 1 and rec["kind"] == "summary":
            note = {k: rec[k] for k in results.SWEEP_KEYS}
            rec = {**results.run_failed("timed out after 120 s", -9, ""), **note}
        out.append(rec)
    failed = tmp_path / "failed.jsonl"
    failed.write_text("".join(json.dumps(rec) + "\n" for rec in out))
    r = run_cli(["report", str(failed), "--out", str(tmp_path / "out2"), "--quiet"])
    assert r.returncode == 0 and "1 problem(s)" in r.stdout, r.stdout + r.stderr
    tables = Tables()
    tables.feed((tmp_path / "out2" / "report.html").read_text())
    assert [(cls, row["failed"]) for cls, row in tables.tables["sweep-run"]] == [
        ("", ""), ("bad", "timed out after 120 s")]


@pytest.mark.parametrize("text, line, why", [
    ('{"kind": "config", "job": "cec"\n', 1, "not JSON"),
    ('{"kind": "summary", "job": "coded", "reps": 1, "all_verified": true}\n[1, 2]\n', 2,
     "not a JSON object"),
    ('{"kind": "summary", "job": "coded", "reps": 1, "all_verified": true}\n'
     '{"kind": "bogus"}\n', 2, "no view"),
    ('{"kind": "run", "job": "coded", "scheme": "uc"}\n', 1, "lacks"),
    ("step,wall_s\n1,0.5\n", 1, "not JSON"),
])
def test_a_malformed_results_file_is_one_line_and_no_page(tmp_path: Path, text: str,
                                                         line: int, why: str) -> None:
    needs("matplotlib", "report")
    good = tmp_path / "good.jsonl"
    good.write_text('{"kind": "summary", "job": "coded", "reps": 1, "all_verified": true}\n')
    bad = tmp_path / "bad.jsonl"
    bad.write_text(text)
    out = tmp_path / "out"
    r = run_cli(["report", str(good), str(bad), "--out", str(out), "--quiet"])
    assert r.returncode == 2
    err = r.stderr.strip().splitlines()
    assert len(err) == 1, r.stderr
    assert err[0].startswith(f"mpi-coded: error: {bad}: line {line}: ") and why in err[0]
    assert not out.exists()  # no partial page


def test_without_matplotlib_one_line_exit_2(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from mpi_coded.cli import main\n"
            f"sys.exit(main(['report', {str(PAPER)!r}, '--out', {str(tmp_path / 'o')!r}]))\n")
    r = run_cmd([sys.executable, "-c", code], timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "mpi-coded: error: matplotlib is not installed (pip install 'mpi-coded[plot]' or "
        "'mpi-coded[report]')"]
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------------------------------
# frame


def same(line_value: Any, cell: Any) -> bool:
    if line_value is None or (isinstance(cell, float) and math.isnan(cell)):
        return line_value is None and (cell is None or (isinstance(cell, float)
                                                        and math.isnan(cell)))
    if hasattr(cell, "item"):  # a numpy scalar
        cell = cell.item()
    return bool(line_value == cell)


def check_round_trip(path: Path, kind: str, job: str | None) -> int:
    """Every line of ``kind`` and its DataFrame row agree field for field; the row count."""
    from mpi_coded import results

    df = results.frame([path], kind, job=job)
    lines = results.records(results.read_results(path), kind, job)
    assert len(df) == len(lines)
    for rec, row in zip(lines, df.to_dict("records")):
        for key, value in rec.items():
            assert same(value, row[key]), (path.name, kind, key, value, row[key])
        assert row["file"] == str(path)
    return len(df)


def test_frame_round_trip_of_the_paper_size_run() -> None:
    needs("pandas", "report")
    assert check_round_trip(PAPER, "run", None) == 4
    assert check_round_trip(PAPER, "config", "coded") == 2
    assert check_round_trip(PAPER, "summary", "coded") == 2
    from mpi_coded import results

    df = results.frame(PAPER, results.CodedRun)
    assert list(df["line"]) == [2, 3, 6, 7] and df["verified"].all()
    assert df.groupby("scheme")["map_s"].median().to_dict().keys() == {"unified", "bdc"}


@pytest.mark.mpi
def test_frame_round_trip_of_the_examples(examples: dict[str, Path]) -> None:
    needs("pandas", "report")
    assert check_round_trip(examples["cec"], "step", None) == 4
    assert check_round_trip(examples["cec"], "config", "cec") == 1
    assert check_round_trip(examples["cec"], "setup", None) == 1
    assert check_round_trip(examples["cec"], "summary", "cec") == 1
    assert check_round_trip(examples["coded"], "run", None) == 2
    assert check_round_trip(examples["sweep"], "step", None) == 8
    from mpi_coded import results

    df = results.frame(list(examples.values()), "ElasticStep")
    assert len(df) == 4 + 8 and set(df["file"]) == {str(examples["cec"]),
                                                    str(examples["sweep"])}
