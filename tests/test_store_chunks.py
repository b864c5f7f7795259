"""A start that does not grow with the data (issue 45): checksums per chunk of rows, the
verified mark tied to the file's identity, the background audit.  Pure: files, no MPI."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from mpi_coded.cec.config import from_mapping
from mpi_coded.errors import ConfigError
from mpi_coded.fields import get_field
from mpi_coded.results import ElasticSetup, StoreOpening
from mpi_coded.store import checksum, marks
from mpi_coded.store.audit import Audit, for_machine
from mpi_coded.store.blocks import Expect, HostBlocks, check_block, scan, verify
from mpi_coded.store.encode import placement, write_store
from mpi_coded.store.manifest import read_manifest
from mpi_coded.store.source import ArrayRows

ROWS, COLS = 23, 7  # blocks of ceil(23 / 3) = 8 rows of 7 float64 words: 56 bytes a row


@pytest.fixture(autouse=True)
def chunks_of_three_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 3 rows: a block of 8 rows has chunks [0, 3), [3, 6), [6, 8)."""
    monkeypatch.setattr(checksum, "ROW_CHUNK_BYTES", 3 * COLS * 8)


def _store(tmp_path: Path, name: str = "float64", transpose: bool = False
           ) -> tuple[HostBlocks, Expect]:
    f = get_field(name)
    x = f.random((ROWS, COLS), np.random.default_rng(5))
    write_store(ArrayRows(x, "seed 5"), f, 3, 5, str(tmp_path / "{host}"),
                placement(5, ["h"], []), range(1, 6), transpose, seed=1,
                progress=lambda s: None)
    want = Expect(f, ROWS, COLS, 3, 5, transpose, None)
    return scan(str(tmp_path / "{host}"), "h", want), want


def _flip(path: Path, row: int, keep_mtime: bool = False) -> None:
    """Flip one byte of row ``row`` of the block at ``path`` (in place: same inode);
    ``keep_mtime``: its mtime set back as it was, as a careless tool might."""
    st = os.stat(path)
    off = int(np.load(path, mmap_mode="r").offset) + row * COLS * 8 + 5
    with open(path, "r+b") as fh:
        fh.seek(off)
        b = fh.read(1)
        fh.seek(off)
        fh.write(bytes([b[0] ^ 0x10]))
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_chunk_checksums_are_written_and_name_the_flipped_chunk(tmp_path: Path) -> None:
    """Each block's entry lists one checksum per chunk of 3 rows; a byte flipped in row 4
    fails chunk 1 (rows 3..6), named with the file; the other blocks pass."""
    hb, _ = _store(tmp_path)
    e = hb.manifest.entry(2) if hb.manifest else None
    assert e is not None and e.chunk_rows == 3 and len(e.chunks) == 3
    assert e.chunk_range(2) == (6, 8)
    _flip(hb.directory / "block-2.npy", 4)
    chk = check_block(hb, 2)
    assert chk.problem is not None and chk.read == 1
    assert "block-2.npy: checksum of rows 3..6 (chunk 1)" in chk.problem
    assert "corrupt" in chk.problem
    assert not marks.mark_path(hb.directory / "block-2.npy").exists()  # no mark left
    assert verify(hb, 1) is None and verify(hb, 3) is None


def test_blocks_of_x_transposed_have_chunk_checksums_too(tmp_path: Path) -> None:
    hb, _ = _store(tmp_path, "gf2^8", transpose=True)
    e = hb.manifest.entry(3, 1) if hb.manifest else None
    assert e is not None and e.chunks and e.chunk_rows >= 1
    assert check_block(hb, 3, use_marks=False).problem is None


def test_a_manifest_without_chunk_checksums_is_checked_whole(tmp_path: Path) -> None:
    """A manifest written before chunk checksums reads as before: the whole file's
    checksum (the message names no chunk)."""
    hb, want = _store(tmp_path)
    p = hb.directory / "manifest.json"
    d = json.loads(p.read_text())
    for b in d["blocks"]:
        del b["chunk_rows"], b["chunks"]
    p.write_text(json.dumps(d))
    hb = scan(str(tmp_path / "{host}"), "h", want)
    assert hb.manifest is not None and not hb.manifest.entry(4).chunks  # type: ignore[union-attr]
    assert check_block(hb, 4, use_marks=False).problem is None
    _flip(hb.directory / "block-4.npy", 0)
    bad = check_block(hb, 4).problem
    assert bad is not None and "block-4.npy: checksum " in bad and "rows" not in bad


def test_chunk_checksums_that_do_not_cover_the_rows_are_refused(tmp_path: Path) -> None:
    hb, want = _store(tmp_path)
    p = hb.directory / "manifest.json"
    d = json.loads(p.read_text())
    d["blocks"][0]["chunks"] = d["blocks"][0]["chunks"][:2]
    p.write_text(json.dumps(d))
    with pytest.raises(ConfigError, match="do not cover 8 rows in chunks of 3"):
        read_manifest(hb.directory)


def test_an_unchanged_block_is_not_read_again(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's writer marks each block; a start with the file unchanged reads none of
    it (its reads counted); a file touched (ctime moves, even with its mtime set back) or a
    mark too old is read whole, once, and marked again."""
    hb, _ = _store(tmp_path)
    reads: list[str] = []
    real = checksum.file_sums

    def counted(path: Path, *a: int) -> tuple[str, list[str]]:
        reads.append(str(path))
        return real(path, *a)

    monkeypatch.setattr(checksum, "file_sums", counted)
    chk = check_block(hb, 1)
    assert chk.problem is None and chk.read == 0 and chk.read_bytes == 0
    assert chk.marked == [hb.directory / "block-1.npy"] and reads == []

    path = hb.directory / "block-1.npy"
    time.sleep(0.01)
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns))  # ctime moves
    chk = check_block(hb, 1)
    assert chk.problem is None and chk.read == 1 and chk.marked == []
    assert chk.read_bytes == os.path.getsize(path) and reads == [str(path)]
    assert check_block(hb, 1).read == 0 and len(reads) == 1  # marked again: not re-read

    assert not marks.valid(path, hb.manifest.entry(1).checksum, max_age_s=0.0)  # type: ignore[union-attr]
    assert check_block(hb, 1, use_marks=False).read == 1 and len(reads) == 2


def test_a_flip_that_keeps_size_and_mtime_voids_the_mark(tmp_path: Path) -> None:
    """After the mark was written, a byte flipped in place and the mtime set back: the
    ctime differs, the mark does not fit, the start reads the block and names the chunk."""
    hb, _ = _store(tmp_path)
    path = hb.directory / "block-3.npy"
    time.sleep(0.01)
    _flip(path, 7, keep_mtime=True)
    chk = check_block(hb, 3)
    assert chk.marked == [] and chk.problem is not None
    assert "rows 6..8 (chunk 2)" in chk.problem


def test_the_audit_finds_a_flip_the_mark_cannot_see(tmp_path: Path) -> None:
    """A flip below the file system (simulated: the mark rewritten for the flipped file):
    the start trusts the mark, the background audit finds chunk 0, drops the mark and
    says why in one line; the next start reads the block and refuses it."""
    hb, _ = _store(tmp_path)
    path = hb.directory / "block-5.npy"
    e = hb.manifest.entry(5)  # type: ignore[union-attr]
    assert e is not None
    _flip(path, 1)
    marks.write(path, e.checksum)  # the forged mark: the file "unchanged"
    chk = check_block(hb, 5)
    assert chk.problem is None and chk.marked == [path]
    assert for_machine(hb, 5, chk.marked).entries == []  # checked a moment ago: no audit
    audit = for_machine(hb, 5, chk.marked, after_s=0.0, duty=1.0)  # an older mark
    assert audit.entries == [(path, e)] and list(audit.idents) == [path]
    assert audit.problem() is None
    audit.start()
    assert audit.done.wait(10)
    bad = audit.problem()
    assert bad is not None and "\n" not in bad
    assert "block-5.npy: checksum of rows 0..3 (chunk 0)" in bad and "background audit" in bad
    assert not marks.mark_path(path).exists()
    assert "chunk 0" in (check_block(hb, 5).problem or "")


def test_the_audit_renews_a_good_mark_and_watches_the_file(tmp_path: Path) -> None:
    hb, _ = _store(tmp_path)
    path = hb.directory / "block-1.npy"
    e = hb.manifest.entry(1)  # type: ignore[union-attr]
    assert e is not None
    before = json.loads(marks.mark_path(path).read_text())["checked_unix"]
    time.sleep(0.01)
    audit = Audit([(path, e)], [path], duty=1.0)
    audit.run()
    assert audit.problem() is None and audit.checked_bytes == 8 * COLS * 8
    assert json.loads(marks.mark_path(path).read_text())["checked_unix"] > before
    with open(path, "ab") as fh:  # written while the job runs
        fh.write(b"\0")
    bad = audit.problem()
    assert bad is not None and "changed on disk while the job ran" in bad
    assert not marks.mark_path(path).exists()


def test_bad_arguments_name_the_rule() -> None:
    with pytest.raises(ConfigError, match="store_check: must be one of mark, full"):
        from_mapping({"store_check": "never"})
    with pytest.raises(ValueError, match="chunk_bytes must be >= 1"):
        checksum.ChunkHasher(0)
    with pytest.raises(ValueError, match=r"duty must be in \(0, 1\]"):
        Audit([], [], duty=0)


def test_chunk_hasher_splits_any_writes_at_chunk_boundaries() -> None:
    data = bytes(range(256)) * 3
    h = checksum.ChunkHasher(100)
    for i in range(0, len(data), 37):
        h.update(data[i: i + 37])
    want = []
    for i in range(0, len(data), 100):
        d = checksum.new()
        d.update(data[i: i + 100])
        want.append(d.hexdigest())
    assert h.close() == want


def test_the_setup_line_carries_the_store_opening() -> None:
    """``store_open_s`` and ``store_parts`` written into the setup line and read back; a
    line without them (a job without a store, or an older runtime) reads as None."""
    parts = StoreOpening(arrive_s=0.4, scan_s=0.1, verify_s=0.0, blocks_read=1,
                         read_bytes=4096, blocks_marked=4, repair_s=0.2)
    line = ElasticSetup(setup_s=0.001, store_open_s=0.8, store_parts=parts).to_dict()
    assert line["store_parts"]["blocks_marked"] == 4 and line["store_open_s"] == 0.8
    back = ElasticSetup.from_record(json.loads(json.dumps(line)))
    assert back.store_parts == parts and back.store_open_s == 0.8
    old = ElasticSetup.from_record(ElasticSetup(setup_s=0.001).to_dict())
    assert old.store_parts is None and old.store_open_s is None
