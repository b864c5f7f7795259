"""A start from the store that does not read unchanged blocks, under mpiexec (issue 45):
a chunk flipped after the store was checked is never used at a start (found by its chunk
checksum, the block repaired from peers), and a flip the mark cannot see is found by the
background audit (the machine withholds its block, which is rebuilt from its peers in the
running job).
Every mpiexec is a subprocess with a timeout (conftest.run_mpi)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli, run_mpi

pytestmark = pytest.mark.mpi

TOML = """job = "cec"
field = "gf2^8"
N = 5
L = 3
rows = 60
cols = 12
t_row = 0.0005
speeds = [1, 1, 2, 2, 1]
[availability]
schedule = [{steps}]
"""


def setup_store(tmp_path: Path, steps: int, schedule: list[str] | None = None
                ) -> tuple[Path, Path]:
    """A store written, then checked by ``store check`` (which marks every block); the
    job's schedule: ``steps`` steps of every machine, or ``schedule``."""
    cfg = tmp_path / "job.toml"
    cfg.write_text(TOML.format(steps=", ".join(schedule or ["[1, 2, 3, 4, 5]"] * steps)))
    store = tmp_path / "store"
    r = run_cli(["store", "write", "--config", str(cfg), "--out", str(store)])
    assert r.returncode == 0, r.stderr
    r = run_cli(["store", "check", "--config", str(cfg), "--store", str(store)])
    assert r.returncode == 0 and json.loads(r.stdout)["verified"] == [1, 2, 3, 4, 5], r.stderr
    assert all((store / f"block-{n}.npy.ok").is_file() for n in range(1, 6))
    return cfg, store


def flip(path: Path, row: int) -> None:
    """One byte of row ``row`` (a block of 12 uint8 words a row) flipped in place, the
    file's mtime set back as it was."""
    st = os.stat(path)
    off = int(np.load(path, mmap_mode="r").offset) + row * 12 + 3
    raw = bytearray(path.read_bytes())
    raw[off] ^= 0x21
    with open(path, "r+b") as fh:
        fh.write(raw)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def run(cfg: Path, store: Path, out: Path, *extra: str):
    return run_mpi(6, ["run", "cec", "--config", str(cfg), "--store", str(store), "--out",
                       str(out), "--timeout", "20", *extra], timeout=120)


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_a_chunk_flipped_after_the_check_is_never_used(tmp_path: Path) -> None:
    """Block 2's row 15 flipped after the marks were written (mtime kept): the start reads
    block 2 alone (the other four are unchanged: not read), names its failing chunk, and
    rank 2 rebuilds it from L peers before the first step; every step verified; the
    setup line records the store's opening and its parts; the store checks clean after."""
    cfg, store = setup_store(tmp_path, 4)
    time.sleep(0.01)
    flip(store / "block-2.npy", 15)
    out = tmp_path / "a.jsonl"
    r = run(cfg, store, out)
    assert r.returncode == 0, r.stderr
    assert "block-2.npy: checksum of rows 0..20 (chunk 0)" in r.stderr
    setup = next(x for x in lines(out) if x["kind"] == "setup")
    assert [x["machine"] for x in setup["store"]["repairs"]] == [2]
    parts = setup["store_parts"]
    assert parts["blocks_read"] == 1 and parts["blocks_marked"] == 4
    assert parts["read_bytes"] == os.path.getsize(store / "block-1.npy")
    assert setup["store_open_s"] >= parts["repair_s"] > 0 and parts["arrive_s"] >= 0
    assert "store opened in" in r.stdout
    steps = [x for x in lines(out) if x["kind"] == "step"]
    assert len(steps) == 4 and all(x["verified"] for x in steps)
    ok = run_cli(["store", "check", "--config", str(cfg), "--store", str(store)])
    assert ok.returncode == 0, ok.stderr  # GF: the repaired block is the original

    out = tmp_path / "b.jsonl"  # store_check = "full": every block read, marks or not
    r = run(cfg, store, out, "--store-check", "full")
    assert r.returncode == 0, r.stderr
    assert lines(out)[0]["store_check"] == "full"
    parts = next(x for x in lines(out) if x["kind"] == "setup")["store_parts"]
    assert parts["blocks_read"] == 5 and parts["blocks_marked"] == 0


def test_a_flip_the_mark_cannot_see_is_found_by_the_audit(tmp_path: Path) -> None:
    """A flip below the file system (simulated: block 3's mark rewritten to fit the flipped
    file, checked two hours ago): the start trusts the mark; machine 3, idle in steps 1-3,
    audits its block (due: the mark is older than an hour) and finds the chunk, one line
    naming the file and the rows; it withholds the block (never computes on it), its
    answers at step 4 fail the check, its CHECK says corrupt without a read, and the block
    is rebuilt from L peers in the running job; every step verified; the store checks
    clean afterwards and block 3 is marked again."""
    cfg, store = setup_store(tmp_path, 0, ["[1, 2, 4, 5]"] * 3 + ["[1, 2, 3, 4, 5]"] * 8)
    path = store / "block-3.npy"
    flip(path, 2)
    mark = json.loads((store / "block-3.npy.ok").read_text())
    st = os.stat(path)
    mark["identity"] = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    mark["checked_unix"] = time.time() - 7200
    (store / "block-3.npy.ok").write_text(json.dumps(mark))
    out = tmp_path / "a.jsonl"
    r = run(cfg, store, out)
    assert r.returncode == 0, r.stderr
    assert "machine 3: " in r.stderr and "found by the background audit" in r.stderr
    assert "block-3.npy: checksum of rows 0..20 (chunk 0)" in r.stderr
    assert "its block is not used" in r.stderr and "Traceback" not in r.stderr
    setup = next(x for x in lines(out) if x["kind"] == "setup")
    assert setup["store"]["repairs"] == [] and setup["store_parts"]["blocks_marked"] == 5
    steps = [x for x in lines(out) if x["kind"] == "step"]
    assert len(steps) == 11 and all(x["verified"] for x in steps)
    assert all(3 not in x["available"] for x in steps[:3])
    events = [(e["machine"], e["event"]) for x in steps for e in x.get("quarantine", [])]
    assert (3, "block-repaired") in events
    ok = run_cli(["store", "check", "--config", str(cfg), "--store", str(store)])
    assert ok.returncode == 0 and json.loads(ok.stdout)["verified"] == [1, 2, 3, 4, 5]
    assert (store / "block-3.npy.ok").is_file()
