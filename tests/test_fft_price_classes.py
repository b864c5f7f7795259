"""The FFT encode's two prices (transforms within and beyond a core's cache) and the
blocked products' price as a geometric mean over its shapes (docs/theory.md (C.4))."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from mpi_coded.analysis import calibration
from mpi_coded.analysis.calibration import measuring as calib_measure
from mpi_coded.coded.code import build_code
from mpi_coded.coded.placement import build_placement
from mpi_coded.coded.schemes import coded_params
from mpi_coded.codes import prices, rs_fft
from mpi_coded.codes import work as W
from mpi_coded.codes.prices import Kernel
from mpi_coded.codes.rs_sub import (
    LARGE_FFT_BYTES,
    PARITY_CHUNK,
    choose_encoder,
    fft_encode_kernel,
    fft_encode_work,
)
from mpi_coded.fields import get_field
from mpi_coded.gf_kernels import product_ns

F16 = get_field("gf2^16")


def test_transform_points_follow_the_layout():
    """The transform length of an encode, by the three layouts of (C.1)."""
    assert rs_fft.fft_encode_points(9000, 6000) == 4096  # high: p2 = 4096
    assert rs_fft.fft_encode_points(900, 600) == 512
    assert rs_fft.fft_encode_points(36, 24) == 16
    kind, _, _, p_off, _, _ = rs_fft._layout(600, 100)  # low: k2 points
    assert kind == "low" and rs_fft.fft_encode_points(600, 100) == p_off == 128


@pytest.mark.parametrize("n,k,cols,large", [
    (9000, 6000, 2048, True),      # unified at the paper's size: 4096 x 2048 x 2 = 16 MiB
    (9000, 6000, 6000, True),      # the server's whole 6000 columns: 2048 at a time
    (2700, 1800, 1800, True),      # 1024 x 1800 x 2 = 3.5 MiB
    (1800, 1200, 1536, False),     # 1024 x 1536 x 2 = 3 MiB: not above the border
    (1800, 1200, 1537, True),
    (900, 600, 2048, False),       # a T = 10 partition: 512 x 2048 x 2 = 2 MiB
    (900, 600, 6000, False),       # capped at the runtime's chunk
    (36, 24, 2048, False),
])
def test_the_fft_price_class_is_the_working_set(n, k, cols, large):
    want = Kernel.RS_FFT_ENCODE_LARGE if large else Kernel.RS_FFT_ENCODE
    assert fft_encode_kernel(n, k, cols) is want
    pts = rs_fft.fft_encode_points(n, k)
    assert (pts * min(cols, PARITY_CHUNK) * 2 > LARGE_FFT_BYTES) is large
    work = fft_encode_work(n, k, cols)
    assert work[0] == W.Work(want, float(rs_fft.fft_encode_ops(n, k, cols)))


def test_the_large_fft_is_memory_bound_and_default_prices_it_alike():
    """The runtime's table prices every FFT encode alike (its choices are unchanged); the
    large transforms count as memory-bound (the memory contention factors apply)."""
    d = prices.DEFAULT
    assert d.seconds(Kernel.RS_FFT_ENCODE_LARGE) == d.seconds(Kernel.RS_FFT_ENCODE)
    assert W.memory_bound(Kernel.RS_FFT_ENCODE_LARGE)
    assert not W.memory_bound(Kernel.RS_FFT_ENCODE)
    # a measured table's large price decides a large code's path, not the small price
    n, k, npar, v = 9000, 6000, 3000, 2048
    zero = {key: 0.0 for key in prices.KEYS if not key.startswith("contention")}
    gen = 1e-9 * npar * k * v
    at_par = gen / rs_fft.fft_encode_ops(n, k, v)
    for large, small, name in ((0.99, 100.0, "rs_fft"), (1.01, 0.0, "generator")):
        t = {**zero, "gf2^16_matmul": 1e-9, "rs_fft_encode_large": large * at_par,
             "rs_fft_encode": small * at_par}
        assert choose_encoder(n, k, npar, v, t)[0] == name


def test_the_paper_codes_list_the_class_of_their_transforms():
    """At the paper's size (m = n = N = 6000) the unified servers' encode lists the large
    price, T = 10's partitions the small one: the shapes whose per-operation cost differs
    by 1.3-1.5x (docs/benchmarks.md)."""
    got = {}
    for scheme, T in (("unified", 1), ("bdc", 10)):
        p = coded_params(scheme, 9, 6, "1/3", 250, 6000, 6000, T=T, field="gf2^16")
        code, pl = build_code(p, F16), build_placement(p)
        kernels = {w.kernel for s in range(p.K)
                   for w in code.encode_work(pl.stored_rows(s), p.n).work}
        got[scheme] = kernels & {Kernel.RS_FFT_ENCODE, Kernel.RS_FFT_ENCODE_LARGE}
    assert got == {"unified": {Kernel.RS_FFT_ENCODE_LARGE}, "bdc": {Kernel.RS_FFT_ENCODE}}


def _slow_parity(monkeypatch, extra_ns_per_op):
    """RSCode.parity that sleeps ``extra_ns_per_op(n, k, v)`` ns per counted operation on
    top of its work."""
    real = rs_fft.RSCode.parity

    def parity(self, data):
        v = data.shape[1]
        time.sleep(extra_ns_per_op(self.n, self.k, v) * 1e-9
                   * rs_fft.fft_encode_ops(self.n, self.k, v))
        return real(self, data)

    monkeypatch.setattr(rs_fft.RSCode, "parity", parity)


def test_each_fft_price_is_measured_on_its_own_shapes(monkeypatch):
    """The two encode prices are fitted on disjoint shapes: slowing only the large
    transforms by 100 ns per operation raises ``rs_fft_encode_large`` to at least that and
    leaves ``rs_fft_encode`` far below it, and the other way round (100 ns: the prices of a
    loaded machine, a few times their quiet 4-10 ns, stay under a quarter of it)."""
    def only(large):
        return lambda n, k, v: 100.0 if (fft_encode_kernel(n, k, v)
                                        is Kernel.RS_FFT_ENCODE_LARGE) == large else 0.0

    for large in (True, False):
        _slow_parity(monkeypatch, only(large))
        got = calib_measure.Measurement()
        calib_measure.measure_rs(True, got, np.random.default_rng(0))
        monkeypatch.undo()
        slow, fast = ((got.table["rs_fft_encode_large"], got.table["rs_fft_encode"])
                      if large else
                      (got.table["rs_fft_encode"], got.table["rs_fft_encode_large"]))
        assert slow >= 100e-9 and fast < slow / 4, (large, got.table)


def test_the_product_price_is_the_geometric_mean_of_its_shapes(monkeypatch):
    """With each shape's product sleeping a known multiple of its estimate, the price is the
    geometric mean of the multiples (every shape counts the same), not the largest shape's:
    one shape at 400 ns per ns and one at 100 gives 200, where a sum of seconds over a sum
    of estimates would give the large one's."""
    big, small = (60, 2000, 600), (9, 18, 1800)
    assert product_ns(*big, 16) > 50 * product_ns(*small, 16)
    per = {big: 100.0, small: 400.0}
    real = type(F16).matmul

    def matmul(self, a, b):
        shape = (a.shape[0], a.shape[1], b.shape[1])
        time.sleep(per[shape] * 1e-9 * product_ns(*shape, 16))
        return real(self, a, b)

    F16.warm_up()  # compiled kernels and tables before any timing
    rng = np.random.default_rng(0)
    for shape in per:
        F16.matmul(F16.random(shape[:2], rng), F16.random(shape[1:], rng))
    monkeypatch.setattr(type(F16), "matmul", matmul)
    got = calib_measure.product_price(F16, [big, small], np.random.default_rng(0), reps=2)
    monkeypatch.undo()
    # a sleep is never shorter, and the work itself adds little at these multiples
    assert 200e-9 <= got < 200e-9 * 1.3, got


def test_a_version_4_file_reads_one_fft_price_for_both_sizes():
    """docs/runs/calibration.json (version 4) reads its one FFT price for both classes (the
    large ones still take the memory contention factor), and so does a partial mapping
    that gives only ``rs_fft_encode``."""
    table = calibration.load(Path(__file__).resolve().parents[1] / "docs/runs/calibration.json")
    assert table["rs_fft_encode_large"] == table["rs_fft_encode"]
    partial = prices.CostTable.of({"rs_fft_encode": 7e-10})
    assert partial.seconds(Kernel.RS_FFT_ENCODE_LARGE) == 7e-10
    both = prices.CostTable.of({"rs_fft_encode": 7e-10, "rs_fft_encode_large": 9e-10})
    assert both.seconds(Kernel.RS_FFT_ENCODE_LARGE) == 9e-10
