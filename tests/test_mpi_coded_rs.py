"""The coded job with RS codes over GF(2^16), for real (docs/theory.md (B.2), (C.1)): each
scheme's small run verifies, records its encoder and decoder, peak RSS per rank and a
progress line per phase; a padded shuffle warns before the job starts."""

from __future__ import annotations

import json

import pytest

from conftest import run_mpi

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("scheme,extra,encoder,decoder", [
    ("unified", [], "rs_fft", "rs_fft"),           # one (300, 200) RS code
    ("bdc", ["--T", "2"], None, "rs_fft"),          # two (150, 100) RS partitions
    ("sc", [], None, None),                         # (6, 4) stripes: the cost rule decides
])
def test_rs_run_per_scheme(tmp_path, scheme, extra, encoder, decoder):
    out = tmp_path / "rs.jsonl"
    r = run_mpi(7, ["run", "coded", "--scheme", scheme, "--K", "6", "--q", "4", "--mu", "1/2",
                    "--rows-per-batch", "20", "--n", "400", "--N", "48", "--field", "gf2^16",
                    *extra, "--out", str(out)], timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    rec = next(json.loads(x) for x in out.read_text().splitlines()
               if json.loads(x)["kind"] == "run")
    assert rec["verified"] is True and rec["field"] == "gf2^16"
    if encoder:
        assert encoder in rec["encoder"].split("+")
    if decoder:
        assert decoder in rec["decoder"].split("+")
    assert set(rec["server_decoder"]) == {str(s) for s in rec["Q"]}
    assert set(rec["peak_rss_mb"]) == {"master", *map(str, range(6))}
    assert 0 < rec["max_peak_rss_mb"] < 1024
    for phase in ("encode", "map", "shuffle", "reduce", "verify"):
        assert f"rep 0 {phase}" in r.stdout


def test_padding_warning_before_the_job(tmp_path):
    r = run_mpi(11, ["run", "coded", "--scheme", "unified", "--K", "10", "--q", "9",
                     "--mu", "1/3", "--rows-per-batch", "1", "--n", "4", "--N", "9",
                     "--out", str(tmp_path / "p.jsonl")], timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stderr.count("mpi-coded: warning: rows_per_batch:") == 1
    assert "7/9" in r.stderr and "--rows-per-batch 6 splits every segment evenly" in r.stderr
