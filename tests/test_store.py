"""The coded store (mpi_coded/store/): written, read back, checked, repaired (pure)."""

from __future__ import annotations

import binascii
import json
import os
from pathlib import Path

import numpy as np
import pytest

from mpi_coded.cec.data import encode_matrix
from mpi_coded.codes.mds import systematic_mds
from mpi_coded.errors import ConfigError
from mpi_coded.fields import get_field
from mpi_coded.store import checkpoint, source
from mpi_coded.store.assign import assign, plan_repairs
from mpi_coded.store.blocks import Expect, open_block, scan, verify
from mpi_coded.store.encode import placement, write_store
from mpi_coded.store.manifest import MANIFEST, read_manifest
from mpi_coded.store.repair import combine, repair_coefficients
from mpi_coded.store.sketch import Sketch, Streamed
from mpi_coded.store.source import ArrayRows, NpyRows

FIELDS = ["float64", "gf2^8", "gf2^16"]


def _x(name: str, rows: int = 23, cols: int = 7) -> np.ndarray:
    return get_field(name).random((rows, cols), np.random.default_rng(5))


def _expect(name: str, x: np.ndarray, L: int = 3, N: int = 5, transpose: bool = False,
            source_: str | None = None) -> Expect:
    return Expect(get_field(name), x.shape[0], x.shape[1], L, N, transpose, source_)


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of a few rows: every chunk boundary and the padding are crossed."""
    monkeypatch.setattr(source, "CHUNK_BYTES", 3 * 7 * 8)
    import mpi_coded.store.encode as enc
    monkeypatch.setattr(enc, "CHUNK_BYTES", 3 * 7 * 8)


@pytest.mark.parametrize("name", FIELDS)
@pytest.mark.parametrize("transpose", [False, True])
def test_written_blocks_are_the_encoded_blocks(tmp_path: Path, name: str,
                                               transpose: bool) -> None:
    """Each block file equals the in-memory encoder's block (A.1), X and X^T, across
    chunk boundaries, for machines placed on two hosts; checksums verify."""
    f, x = get_field(name), _x(name)
    where = placement(5, ["h1", "h2"], [])
    write_store(ArrayRows(x, "seed 5"), f, 3, 5, str(tmp_path / "{host}"), where,
                range(1, 6), transpose, seed=9, progress=lambda s: None)
    g = systematic_mds(f, 5, 3)
    want, want_t = encode_matrix(f, g, 3, x), encode_matrix(f, g, 3, x.T)
    for host, ms in (("h1", [1, 3, 5]), ("h2", [2, 4])):
        hb = scan(str(tmp_path / "{host}"), host, _expect(name, x, transpose=transpose))
        assert hb.held == ms and hb.problems == []
        for n in ms:
            assert verify(hb, n) is None
            np.testing.assert_array_equal(open_block(hb, n, 0), want[n - 1])
            if transpose:
                np.testing.assert_array_equal(open_block(hb, n, 1), want_t[n - 1])


def test_npy_rows_stream_the_file(tmp_path: Path) -> None:
    x = _x("float64", 10, 4)
    np.save(tmp_path / "x.npy", x)
    src = NpyRows(tmp_path / "x.npy", np.dtype(np.float64))
    np.testing.assert_array_equal(np.vstack([c for _, _, c in src.chunks(3 * 4 * 8)]), x)
    np.testing.assert_array_equal(src.read(8, 12)[2:], np.zeros((2, 4)))
    assert src.data_hash() == ArrayRows(x, "").data_hash()


@pytest.mark.parametrize("name", FIELDS)
def test_sketch_passes_the_right_product_and_fails_a_wrong_one(tmp_path: Path,
                                                                name: str) -> None:
    """Freivalds' check (docs/storage.md (S.1), (S.2)): the true X w and X^T z pass; one
    wrong entry fails (over GF the check is exact)."""
    f, x = get_field(name), _x(name)
    write_store(ArrayRows(x, "s"), f, 3, 5, str(tmp_path), placement(5, [], []), [1],
                True, seed=3, progress=lambda s: None)
    m = read_manifest(tmp_path)
    sk = Sketch(f, m.sketch, m.rows, m.cols)
    rng = np.random.default_rng(1)
    w, z = f.random(7, rng), f.random(23, rng)
    y, g = f.matmul(x, w), f.matmul(x.T, z)
    assert f.verified(sk.error(0, y, w)) and f.verified(sk.error(1, g, z))
    for arr, which, v in ((y, 0, w), (g, 1, z)):
        bad = arr.copy()
        bad[2] = bad[2] + 1 if not f.exact else bad[2] ^ 1
        assert not f.verified(sk.error(which, bad, v))


@pytest.mark.parametrize("name", FIELDS)
def test_the_sketch_is_held_as_bytes_and_a_format_1_list_still_reads(tmp_path: Path,
                                                                      name: str) -> None:
    """Format 2 holds ``s`` and ``t`` as base64 strings of their little-endian bytes (no
    number of them parsed at a start); a format-1 manifest's lists read as the same
    strings (one identity: a store whose hosts were written by the two versions opens),
    giving the same check; a string that is not base64 is refused, not read as zeros."""
    f, x = get_field(name), _x(name)
    write_store(ArrayRows(x, "s"), f, 3, 5, str(tmp_path), placement(5, [], []), [1],
                True, seed=3, progress=lambda s: None)
    m = read_manifest(tmp_path)
    assert m.format == 2 and m.sketch["encoding"] == "base64-le"
    assert isinstance(m.sketch["s"], str) and isinstance(m.sketch["t"], str)
    new = Sketch(f, m.sketch, m.rows, m.cols)
    for got, want in ((new.s, f.matmul(new.r, x)), (new.t, f.matmul(new.u, x.T))):
        if f.exact:  # s = r X and t = X u, computed again here
            np.testing.assert_array_equal(got, want)
        else:  # summed in the store's row chunks
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    d = json.loads((tmp_path / MANIFEST).read_text())
    d["format"], d["sketch"]["s"], d["sketch"]["t"] = 1, new.s.tolist(), new.t.tolist()
    del d["sketch"]["encoding"]
    (tmp_path / MANIFEST).write_text(json.dumps(d))
    old = read_manifest(tmp_path)  # read as format 2: hosts of both versions, one store
    assert old.format == 2 and old.sketch == m.sketch and old.digest() == m.digest()
    was = Sketch(f, old.sketch, old.rows, old.cols)
    np.testing.assert_array_equal(was.s, new.s)
    np.testing.assert_array_equal(was.t, new.t)
    with pytest.raises(binascii.Error):
        Sketch(f, {**m.sketch, "s": "not base64!"}, m.rows, m.cols)


def test_streamed_matrix_products(tmp_path: Path) -> None:
    x = _x("float64")
    np.save(tmp_path / "x.npy", x)
    s = Streamed(NpyRows(tmp_path / "x.npy", np.dtype(np.float64)), get_field("float64"))
    v, z = np.arange(7.0), np.arange(23.0)
    np.testing.assert_allclose(s @ v, x @ v, rtol=1e-13)
    np.testing.assert_allclose(s.T @ z, x.T @ z, rtol=1e-13)
    assert s.shape == (23, 7) and s.T.shape == (7, 23)


def _store(tmp_path: Path, name: str = "float64") -> tuple[np.ndarray, str]:
    x = _x(name)
    write_store(ArrayRows(x, "seed 5"), get_field(name), 3, 5, str(tmp_path / "{host}"),
                placement(5, ["h"], []), range(1, 6), False, seed=1, progress=lambda s: None)
    return x, str(tmp_path / "{host}")


def test_bad_blocks_are_not_held(tmp_path: Path) -> None:
    """A missing file, a truncated one, a corrupt one (checksum): each named with its rule,
    the machine not used; the others are."""
    x, tpl = _store(tmp_path)
    d = tmp_path / "h"
    (d / "block-2.npy").unlink()
    with open(d / "block-3.npy", "r+b") as fh:
        fh.truncate(os.path.getsize(d / "block-3.npy") - 8)
    raw = bytearray((d / "block-4.npy").read_bytes())
    raw[-3] ^= 0xFF
    (d / "block-4.npy").write_bytes(bytes(raw))
    hb = scan(tpl, "h", _expect("float64", x))
    assert hb.held == [1, 4, 5]
    text = "\n".join(hb.problems)
    assert "block-2.npy: missing" in text and "block-3.npy" in text and "truncated" in text
    assert verify(hb, 1) is None
    bad = verify(hb, 4)
    assert bad is not None and "block-4.npy: checksum" in bad and "corrupt" in bad


@pytest.mark.parametrize("field_name, change", [
    ("L", {"L": 2}), ("N", {"N": 6}), ("rows", {"rows": 24}), ("field", {"field": "gf2^8"}),
])
def test_a_store_of_another_job_is_refused(tmp_path: Path, field_name: str,
                                           change: dict[str, object]) -> None:
    x, tpl = _store(tmp_path)
    kw = {"field": get_field("float64"), "rows": 23, "cols": 7, "L": 3, "N": 5,
          "transpose": False, "source": None}
    if "field" in change:
        change = {"field": get_field("gf2^8")}
    kw.update(change)
    with pytest.raises(ConfigError) as e:
        scan(tpl, "h", Expect(**kw))  # type: ignore[arg-type]
    assert "manifest.json" in str(e.value) and field_name in str(e.value)


def test_a_store_of_another_data_set_is_refused(tmp_path: Path) -> None:
    x, tpl = _store(tmp_path)
    with pytest.raises(ConfigError, match="another data set"):
        scan(tpl, "h", _expect("float64", x, source_="/data/other.npy"))


def test_a_torn_manifest_loses_the_host_not_the_job(tmp_path: Path) -> None:
    x, tpl = _store(tmp_path)
    (tmp_path / "h" / "manifest.json").write_text("{\"format\": 1, ")
    hb = scan(tpl, "h", _expect("float64", x))
    assert hb.held == [] and "manifest.json: cannot read" in hb.problems[0]


def test_a_newer_manifest_format_is_refused(tmp_path: Path) -> None:
    x, tpl = _store(tmp_path)
    p = tmp_path / "h" / "manifest.json"
    d = json.loads(p.read_text())
    d["format"] = 99
    p.write_text(json.dumps(d))
    hb = scan(tpl, "h", _expect("float64", x))
    assert hb.held == [] and "format 99" in hb.problems[0]


@pytest.mark.parametrize("name", FIELDS)
def test_repair_from_any_L_blocks(name: str) -> None:
    """(S.3): any L machines' blocks rebuild machine n's block exactly (GF) or to rounding."""
    f, x = get_field(name), _x(name)
    g = systematic_mds(f, 6, 3)
    blocks = encode_matrix(f, g, 3, x)
    for n, srcs in ((1, [2, 4, 6]), (5, [1, 2, 3]), (3, [4, 5, 6])):
        c = repair_coefficients(f, g, n, srcs)
        got = combine(f, c, [blocks[m - 1] for m in srcs])
        if f.exact:
            np.testing.assert_array_equal(got, blocks[n - 1])
        else:
            np.testing.assert_allclose(got, blocks[n - 1], rtol=1e-9, atol=1e-12)


def test_assignment_and_repairs() -> None:
    """Ranks take the lowest block their host holds; spares repair the unheld machines from
    rotating sources; a bad block is rebuilt in place; too few good blocks: no repair."""
    held = [[], [1, 2], [1, 2], [3, 4], [], [6]]
    first = assign(held)
    assert first == {1: 1, 2: 2, 3: 3, 4: None, 5: 6}
    lay = plan_repairs(first, {1: True, 2: True, 3: False, 5: True}, N=6, L=3)
    assert lay.machine_of == {1: 1, 2: 2, 3: 3, 4: 4, 5: 6}
    assert [(r.rank, r.machine) for r in lay.repairs] == [(3, 3), (4, 4)]
    assert lay.repairs[0].sources == ((1, 1), (2, 2), (6, 5))
    assert lay.lost == (5,)
    few = plan_repairs(first, {1: True, 2: False, 3: False, 5: False}, N=6, L=3)
    assert few.repairs == () and few.machine_of == {1: 1} and few.unused == (2, 3, 4, 5)


def test_checkpoint_round_trip_and_refusal(tmp_path: Path) -> None:
    out = str(tmp_path / "r.jsonl")
    st = checkpoint.SavedState(4, "abc", {"w": np.arange(3.0)}, {"eta": 0.5})
    checkpoint.save(out, st)
    got = checkpoint.load(out, "abc")
    assert got is not None and got.step == 4 and got.values == {"eta": 0.5}
    np.testing.assert_array_equal(got.arrays["w"], np.arange(3.0))
    with pytest.raises(ConfigError, match="another job"):
        checkpoint.load(out, "xyz")
    assert checkpoint.load(str(tmp_path / "none.jsonl"), "abc") is None


def test_store_write_this_host_if_missing(tmp_path: Path) -> None:
    """``store write --this-host --if-missing`` (what slurm/cec.sh runs on each node): only
    this host's blocks; nothing, and X not read, where its directory holds a manifest or
    no block is placed on it; a directory without its manifest (a write cut short) is
    written again."""
    import socket

    from conftest import SMALL_CEC_TOML, run_cli

    cfg = tmp_path / "job.toml"
    cfg.write_text(SMALL_CEC_TOML)
    here = socket.gethostname()
    args = ["store", "write", "--config", str(cfg), "--out", str(tmp_path / "s" / "{host}"),
            "--hosts", f"{here},elsewhere", "--this-host", "--if-missing"]

    def write() -> dict:
        r = run_cli(args)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout.strip().splitlines()[-1])

    assert write()["machines"] == [1, 3]  # machine 2's block is placed on "elsewhere"
    d = tmp_path / "s" / here
    assert sorted(p.name for p in d.iterdir()) == ["block-1.npy", "block-1.npy.ok",
                                                   "block-3.npy", "block-3.npy.ok",
                                                   "manifest.json"]  # .ok: verified marks
    assert not (tmp_path / "s" / "elsewhere").exists()
    stamps = {p.name: p.stat().st_mtime_ns for p in d.iterdir()}
    assert write()["machines"] == []
    assert {p.name: p.stat().st_mtime_ns for p in d.iterdir()} == stamps
    (d / "manifest.json").unlink()
    assert write()["machines"] == [1, 3] and (d / "manifest.json").is_file()
    args[args.index("--hosts") + 1] = "elsewhere"
    assert write() == {"store": args[args.index("--out") + 1], "dirs": [], "machines": [],
                       "bytes": 0, "seconds": 0.0}
