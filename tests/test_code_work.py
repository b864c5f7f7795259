"""The work a code lists (``encode_work`` / ``decode_work``) is the work it runs, and the
calibrated model prices it (docs/theory.md (C.4)); the reducers' gather."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from mpi_coded.analysis import calibration
from mpi_coded.analysis.calibration import contention as calib_contention
from mpi_coded.analysis.calibration import measuring as calib_measure
from mpi_coded.cli.main import main as cli_main
from mpi_coded.coded import exchange
from mpi_coded.coded.code import ROW_OPERAND, build_code
from mpi_coded.coded.mapend import map_end
from mpi_coded.coded.placement import build_placement
from mpi_coded.coded.replay import replay_order
from mpi_coded.coded.schemes import coded_params
from mpi_coded.coded.shuffle import shuffle_plan
from mpi_coded.codes import prices
from mpi_coded.codes import work as W
from mpi_coded.codes.prices import Contention, CostTable, FieldOp, Kernel
from mpi_coded.codes.rs_fft import fft_encode_ops
from mpi_coded.codes.rs_sub import (
    RSSubCode,
    choose_decoder,
    choose_encoder,
    fft_encode_work,
    prefer_rs,
)
from mpi_coded.errors import ConfigError
from mpi_coded.fields import GFField, get_field
from mpi_coded.gf_costs import _kernel_costs, product_ns
from mpi_coded.gf_costs import choose as _choose

F16 = get_field("gf2^16")

CASES = [
    ("unified", 1, 9, 6, "1/3", 30, "gf2^16"),   # one RS code (1080, 720)
    ("bdc", 10, 9, 6, "1/3", 30, "gf2^16"),      # RS partitions (108, 72)
    ("bdc", 30, 9, 6, "1/3", 30, "gf2^16"),      # short RS partitions (36, 24)
    ("bdc", 4, 6, 4, "1/2", 4, "gf2^8"),         # [I; Cauchy] over GF(2^8)
    ("sc", 1, 9, 6, "1/3", 30, "gf2^16"),        # (9, 6) stripes
    ("unified", 1, 6, 4, "1/2", 10, "gf2^8"),
]


@pytest.mark.parametrize("scheme,T,K,q,mu,rpb,field", CASES)
def test_listed_work_names_the_algorithms_that_run(scheme, T, K, q, mu, rpb, field):
    """encode_work / decode_work take the very decisions encode / decode take."""
    f = get_field(field)
    p = coded_params(scheme, K, q, mu, rpb, 24, q * 4, T=T, field=field)
    pl = build_placement(p)
    rng = np.random.default_rng(0)
    A = f.random((p.m, p.n), rng)
    for s in range(K):
        code = build_code(p, f)
        rows = pl.stored_rows(s)
        code.encode(A, rows)
        listed = code.encode_work(rows, p.n)
        assert listed.algorithms == code.encoders
        assert listed.seconds() > 0
    order = [int(x) for x in rng.permutation(K)]
    plan = shuffle_plan(pl, map_end(pl, order))
    for red in plan.reducers:
        code = build_code(p, f)
        w = red.out_stop - red.out_start
        listed = code.decode_work(red.decode_rows, w)  # before decoding: nothing cached
        code.decode(red.decode_rows, f.random((len(red.decode_rows), w), rng))
        assert listed.algorithms == code.decoders


def test_generator_rows_in_pieces_encode_the_same_rows(monkeypatch):
    """The row-by-row encoding cuts each generator row's operand into pieces of at most
    ROW_OPERAND elements; the coded rows do not change."""
    f = get_field("gf2^8")
    p = coded_params("bdc", 9, 6, "1/3", 30, 24, 24, T=30, field="gf2^8")
    code = build_code(p, f)
    A = f.random((p.m, p.n), np.random.default_rng(2))
    rows = build_placement(p).stored_rows(8)
    whole = code.encode(A, rows)
    assert code.encoders.get("generator")
    monkeypatch.setattr("mpi_coded.coded.code.ROW_OPERAND", 3 * code.layout.k * p.n)
    _, _, calls = code._encode_calls(rows, p.n)
    assert max(len(sel) for how, a, sel in calls if a >= code.layout.k) <= 3
    assert np.array_equal(code.encode(A, rows), whole)
    assert code.encode_work(rows, p.n).algorithms == code.encoders  # the pieces, counted
    assert np.array_equal(whole, f.matmul(code.psi()[list(rows)], A))
    assert ROW_OPERAND >= 1 << 16


def test_product_prices_the_kernel_the_product_runs():
    thin = W.product("gf2^16", 2, 18, 1000)
    assert thin[:2] == [W.Work(Kernel.GF16_THIN, 36000.0),
                        W.Work(Kernel.GF16_THIN_OPERAND, 18000.0)]
    big = W.product("gf2^8", 250, 4096, 1024)
    # a blocked product: its multiply-adds and the GF kernels' estimate of its ns
    assert [w.kernel for w in big] == [Kernel.GF8_MATMUL, Kernel.GF8_PRODUCT, Kernel.CALL]
    assert big[0].ops == 250 * 4096 * 1024
    assert big[1].ops == pytest.approx(product_ns(250, 4096, 1024, 8))
    # the estimate is that of the kernel gf_matmul picks: the cheapest
    costs = _kernel_costs(250, 4096, 1024, 8)
    assert big[1].ops == pytest.approx(costs[_choose(250, 4096, 1024, 8)])
    assert W.product("gf2^16", 2, 18, 1000, blocked=True)[0].kernel is Kernel.GF16_MATMUL
    assert [w.kernel for w in W.inverse("gf2^16", 5)] == [Kernel.GF16_INVERSE,
                                                          Kernel.GF16_INVERSE_STEP]
    table = {"gf2^16_thin": 2.0, "gf2^16_thin_operand": 3.0, "call": 10.0}
    assert W.price(thin, table) == pytest.approx(72000.0 + 54000.0 + 10.0)
    # memory-bound kernels (the scalar product, copies, Python around short codes, the FFT
    # of transforms beyond a core's cache) and compute-bound ones (blocked products, the
    # RS FFT of smaller transforms)
    assert [k for k in ("gf2^16_thin", "gf2^8_thin_operand", "copy", "call", "place",
                        "gf2^16_inverse_step", "gf2^16_matmul", "gf2^8_product",
                        "rs_fft_encode", "rs_fft_encode_large") if W.memory_bound(k)] == [
        "gf2^16_thin", "gf2^8_thin_operand", "copy", "call", "place", "gf2^16_inverse_step",
        "rs_fft_encode_large"]
    mixed = [W.Work(Kernel.COPY, 30.0), W.Work(Kernel.RS_FFT_ENCODE, 10.0)]
    assert W.memory_share(mixed, {"copy": 1.0, "rs_fft_encode": 7.0}) == pytest.approx(0.3)
    assert W.memory_share([], table) == 0.0


def test_the_cost_table_is_typed():
    """One table, keyed by the kernel enum: a misspelt key is an error, never a silent
    default; the file's string keys are the enum's values."""
    assert prices.KEYS == tuple(W.DEFAULT_SECONDS) and len(prices.KEYS) == 24
    assert Kernel.gf("gf2^16", FieldOp.THIN) is Kernel.GF16_THIN
    assert Kernel.gf("float64", FieldOp.PRODUCT) is Kernel.GF8_PRODUCT
    with pytest.raises(KeyError, match="gf2\\^16_thin_operant"):
        W.price(W.product("gf2^16", 2, 3, 4), {"gf2^16_thin_operant": 1.0})
    with pytest.raises(KeyError):
        W.Work("gf2^16_matmull", 1.0)  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="contention factor"):
        W.Work("contention_over", 1.0)  # type: ignore[arg-type]
    t = CostTable.of({"copy": 2.0, Contention.OVER: 1.5})
    assert t.seconds(Kernel.COPY) == 2.0 and t.factor(Contention.OVER) == 1.5
    assert t.seconds(Kernel.CALL) == prices.DEFAULT.seconds(Kernel.CALL)
    assert CostTable.of(t) is t and CostTable.of(None) is prices.DEFAULT
    assert CostTable.of(t.to_dict()) == t
    assert prices.DEFAULT.check() == [] and t.replace({"copy": -1.0}).check() != []


def test_the_runtime_choice_and_the_model_read_one_price():
    """The cost rule's price of each path (RSSubCode.encode_cost / decode_cost, what it
    compares) is the price of the calls encode_work / decode_work list for that path, in
    any table; and the model's seconds of a job are those listed calls, so with the
    runtime's table the model reads the very prices the runtime chose with."""
    rng = np.random.default_rng(5)
    table = CostTable.of({k: float(rng.uniform(1e-10, 1e-8)) for k in prices.KEYS
                          if not k.startswith("contention")})
    names = set()
    for n, k, npar, v, fft_scale in [(36, 24, 12, 600, 1.0), (36, 24, 3, 600, 1.0),
                                     (90, 60, 20, 6000, 1e-3), (1080, 720, 360, 24, 1e-3),
                                     (9, 6, 3, 40, 1.0), (108, 72, 36, 30, 1e3)]:
        t = table.replace({"rs_fft_encode": table.seconds(Kernel.RS_FFT_ENCODE) * fft_scale,
                           "rs_fft_decode": table.seconds(Kernel.RS_FFT_DECODE) * fft_scale})
        sub = RSSubCode(F16, n, k, t)
        pos = list(range(k - 2, k + npar))  # two data rows, npar parity rows
        fft, gen = sub.encode_cost(npar, v)
        name, work = sub.encode_work(pos, v)
        names.add(name)
        assert name == ("rs_fft" if fft < gen else "generator")
        rule = fft if name == "rs_fft" else gen
        assert W.price(work, t) == pytest.approx(W.price([W.copy(len(pos) * v)], t) + rule,
                                                 rel=1e-12)
        dpos = list(range(1, k + 1))
        fft, gen = sub.decode_cost(dpos, v)
        name, work = sub.decode_work(dpos, v)
        names.add(name)
        assert W.price(work, t) == pytest.approx(fft if name == "rs_fft" else gen, rel=1e-12)
        # the build-time rule reads the same table
        assert prefer_rs(n, k, v, v, t) == (
            choose_decoder(n, k, v, table=t)[0] == "rs_fft"
            or W.price(W.product("gf2^16", n - k, k, v, blocked=True), t) > W.price(
                fft_encode_work(n, k, v), t))
    assert names == {"rs_fft", "generator"}
    # the model: a job's code decides with the runtime's table, and the model's seconds
    # with that table are the prices the rule compared, partition by partition
    p = coded_params("bdc", 9, 6, "1/3", 30, 200, 6, T=10, field="gf2^16")
    jw = calibration.job_work(p)
    assert jw is not None
    code = build_code(p)
    sub = code.sub  # type: ignore[attr-defined]
    assert isinstance(sub, RSSubCode) and sub.table is None
    lay, pl = code.layout, build_placement(p)
    seen = set()
    for s in range(p.K):
        rows = pl.stored_rows(s)
        parts, pos, calls = code._encode_calls(rows, p.n)  # type: ignore[attr-defined]
        want = 0.0
        for _how, t_, sel in calls:
            par = len(np.unique(pos[sel][pos[sel] >= lay.k]))
            fft, gen = sub.encode_cost(par, p.n)
            name = sub.encode_work(pos[sel], p.n)[0]
            seen.add(name)
            rule = {"rs_fft": fft, "generator": gen, "systematic": W.price([W.call()])}[name]
            gather = 0 if code._consecutive(t_) else lay.k * p.n  # type: ignore[attr-defined]
            want += rule + W.price([W.copy(gather + 2 * len(sel) * p.n)])
        assert jw.encode[s].seconds(None) == pytest.approx(want, rel=1e-12)
    assert seen == {"systematic", "rs_fft", "generator"}


def test_the_encoder_comes_from_the_cost_rule():
    """Hand-computed cases where each path must win: all prices 0 but the generator's
    multiply-adds (1 ns) and the FFT's operations, set just below or just above the
    generator's seconds."""
    zero = {k: 0.0 for k in prices.KEYS if not k.startswith("contention")}
    n, k, npar, v = 90, 60, 20, 100
    at_par = 1e-9 * npar * k * v / fft_encode_ops(n, k, v)
    cheap = {**zero, "gf2^16_matmul": 1e-9, "rs_fft_encode": 0.99 * at_par}
    dear = {**zero, "gf2^16_matmul": 1e-9, "rs_fft_encode": 1.01 * at_par}
    assert choose_encoder(n, k, npar, v, cheap)[0] == "rs_fft"
    assert choose_encoder(n, k, npar, v, dear)[0] == "generator"
    assert choose_encoder(n, k, 0, v, dear) == ("systematic", [])
    # at most THIN_ROWS parity rows: the scalar kernel's prices decide
    thin = {**zero, "gf2^16_thin": 1e-9, "gf2^16_matmul": 1e9,
            "rs_fft_encode": 1e-9 * 8 * k * v / fft_encode_ops(n, k, v)}
    assert choose_encoder(n, k, 8, v, {**thin, "rs_fft_encode": thin["rs_fft_encode"] * 1.01}
                          )[0] == "generator"
    assert choose_encoder(n, k, 8, v, {**thin, "rs_fft_encode": thin["rs_fft_encode"] * 0.99}
                          )[0] == "rs_fft"
    # the code runs what the rule picks, and the rows are the same
    rng = np.random.default_rng(3)
    msg = F16.random((k, v), rng)
    rows = list(range(k, k + npar))
    got = {}
    for table in (cheap, dear):
        sub = RSSubCode(F16, n, k, table)
        got[sub.encode_work(rows, v)[0]] = sub.encode_rows(rows, msg)
        assert sub.last_encoder == sub.encode_work(rows, v)[0]
    assert set(got) == {"rs_fft", "generator"}
    assert np.array_equal(got["rs_fft"], got["generator"])
    # the model's fallback (no listed work) takes its encoder from the same rule: a
    # unified (1080, 720) code, each server 240 rows, 80 of them parity rows
    p = coded_params("unified", 9, 6, "1/3", 30, 200, 6, field="gf2^16")
    assert (p.code_length, p.code_dimension, p.mu_eff * p.m) == (1080, 720, 240)
    at_par = 1e-9 * 80 * 720 * 200 / fft_encode_ops(1080, 720, 200)
    for scale, name in ((0.99, "rs_fft"), (1.01, "generator")):
        table = {**zero, "gf2^16_matmul": 1e-9, "rs_fft_encode": scale * at_par}
        secs = calibration.phase_seconds(p, table)
        assert secs["encoder"] == name
        assert secs["encode"] == pytest.approx(
            min(scale, 1.0) * 1e-9 * 80 * 720 * 200, rel=1e-12)
    # and agrees with the job's listed work (the runtime's table)
    assert "rs_fft" in (calibration.predict_seconds(p).encoder or "")
    assert calibration.phase_seconds(p)["encoder"] == "rs_fft"


def test_shared_wall_is_processor_sharing():
    sw = calibration.shared_wall
    assert sw([1.0, 2.0, 3.0], None) == 3.0
    assert sw([1.0] * 9, 2) == pytest.approx(4.5)
    # 3 servers on 2 cores: all run at 2/3 until the 1 s one ends (1.5 s), then 2 on 2
    assert sw([1.0, 2.0, 2.0], 2) == pytest.approx(1.5 + 1.0)
    assert sw([5.0, 0.1], 4) == pytest.approx(5.0)
    assert sw([], 2) == 0.0
    # a rank still finishing its map chunk competes, but is not waited for
    assert sw([1.0], 1, background=[5.0]) == pytest.approx(2.0)
    assert sw([1.0, 1.0], 2, background=[0.5, 0.5]) == pytest.approx(0.5 * 2 + 0.5)
    # contention: memory-bound work slows more beside others than compute-bound work
    table = {**W.DEFAULT_SECONDS, "contention_cores": 1.1, "contention_over": 1.2,
             "contention_cores_memory": 1.5, "contention_over_memory": 2.0}
    assert calibration.slowdown(1, 2, table, memory=1.0) == 1.0
    assert calibration.slowdown(2, 2, table) == pytest.approx(1.1)
    assert calibration.slowdown(2, 2, table, memory=1.0) == pytest.approx(1.5)
    assert calibration.slowdown(4, 2, table, memory=0.5) == pytest.approx(2 * 1.6)
    assert sw([1.0] * 4, 2, table) == pytest.approx(2 * 1.2)
    assert sw([1.0] * 4, 2, table, memory=[1.0] * 4) == pytest.approx(2 * 2.0)
    # 2 servers on 2 cores, one memory-bound: the compute-bound one ends first (at 1.1),
    # the other has 1 - 1.1 / 1.5 left, alone
    assert sw([1.0, 1.0], 2, table, memory=[0.0, 1.0]) == pytest.approx(
        1.1 + (1 - 1.1 / 1.5))


def test_predicted_phases_follow_the_listed_work():
    table = dict(W.DEFAULT_SECONDS)
    p = coded_params("unified", 9, 6, "1/3", 60, 1440, 1440, field="gf2^16")
    alone = calibration.predict_seconds(p, table)  # a core per server
    shared = calibration.predict_seconds(p, table, cores=2)
    assert alone.encoder == "systematic+rs_fft" and alone.decoder == "rs_fft"
    assert alone.wall.encode == pytest.approx(alone.per_server.encode)
    for ph in ("encode", "map", "reduce"):
        assert getattr(alone.per_server, ph) <= getattr(shared.wall, ph) <= \
            9 * getattr(alone.wall, ph)
    # the slowest server's encoding is its listed work, priced
    jw = calibration.job_work(p)
    assert jw is not None
    assert alone.per_server.encode == pytest.approx(
        max(w.seconds(table) for w in jw.encode))
    # dearer FFT decoding: dearer reduce, same encode
    dear = calibration.predict_seconds(p, {**table, "rs_fft_decode": 1e-6})
    assert dear.wall.reduce > 10 * alone.wall.reduce
    assert dear.wall.encode == pytest.approx(alone.wall.encode)


def test_lt_falls_back_to_operation_counts():
    p = coded_params("lt", 6, 4, "1/2", 4, 8, 8, field="gf2^8")
    assert calibration.job_work(p) is None
    secs = calibration.predict_seconds(p, dict(W.DEFAULT_SECONDS), cores=2)
    assert secs.wall.map > 0
    # a code that is not MDS has one path, the sparse generator rows (the rule's only
    # candidate): rows x SPARSE_DEGREE x n multiply-adds at 1 s each, nothing else
    zero = {k: 0.0 for k in prices.KEYS if not k.startswith("contention")}
    got = calibration.phase_seconds(p, {**zero, "gf2^8_matmul": 1.0})
    rows = int(p.mu_eff * p.m)
    assert got["encoder"] == "generator" and secs.encoder == "generator"
    assert got["encode"] == rows * 3 * p.n and got["map"] == 0.0


def test_calibration_file_version_and_keys(tmp_path):
    table = {k: 1.0 if k.startswith("contention") else 1e-9 for k in calibration.KEYS}
    path = tmp_path / "cal.json"
    table["rs_fft_encode_large"] = 3e-9
    doc = calibration.write(table, path, problems={"copy": "fit -1 is not > 0"})
    assert doc["version"] == calibration.VERSION == 5 and doc["problems"]
    assert calibration.load(path) == table
    # versions 3 and 4 have no rs_fft_encode_large: read as their one FFT encode price
    older = {k: v for k, v in table.items() if k != "rs_fft_encode_large"}
    v4 = tmp_path / "v4.json"
    v4.write_text(json.dumps({"version": 4, "seconds_per_op": older}))
    assert calibration.load(v4) == {**table, "rs_fft_encode_large": 1e-9}
    # version 3: its per-multiply-add matmul prices read as 0
    v3 = tmp_path / "v3.json"
    v3.write_text(json.dumps({"version": 3, "seconds_per_op": older}))
    assert calibration.load(v3) == {**table, "rs_fft_encode_large": 1e-9,
                                    "gf2^8_matmul": 0.0, "gf2^16_matmul": 0.0}
    # version 5 without the key is not a version 5 file
    v5 = tmp_path / "v5.json"
    v5.write_text(json.dumps({"version": 5, "seconds_per_op": older}))
    with pytest.raises(ConfigError, match="seconds_per_op.rs_fft_encode_large must be"):
        calibration.load(v5)
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"version": 1, "seconds_per_op": table}))
    with pytest.raises(ConfigError, match="version 1 file; this model reads versions 3, 4, 5"):
        calibration.load(old)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": calibration.VERSION,
                               "seconds_per_op": {**table, "copy": -1}}))
    with pytest.raises(ConfigError, match="seconds_per_op.copy must be a number >= 0"):
        calibration.load(bad)
    bad.write_text(json.dumps({"version": calibration.VERSION,
                               "seconds_per_op": {**table, "contention_over_memory": 0.5}}))
    with pytest.raises(ConfigError, match="contention_over_memory must be a number >= 1"):
        calibration.load(bad)


def test_model_cli_predicts_seconds_with_shared_cores(tmp_path, capsys):
    path = tmp_path / "cal.json"
    calibration.write(dict(W.DEFAULT_SECONDS), path)
    base = ["model", "--scheme", "bdc", "--K", "9", "--q", "6", "--mu", "1/3",
            "--rows-per-batch", "30", "--T", "10", "--calibration", str(path), "--json"]
    assert cli_main(base) == 0
    alone = json.loads(capsys.readouterr().out)["seconds"]
    assert cli_main([*base, "--cores", "2"]) == 0
    shared = json.loads(capsys.readouterr().out)["seconds"]
    assert alone["cores"] == 9 and shared["cores"] == 2
    assert shared["wall"]["encode"] > alone["wall"]["encode"]
    assert cli_main([*base, "--cores", "0"]) == 2
    assert "cores: must be an integer >= 1" in capsys.readouterr().err


SLEEP = 0.003


def _patched_matmul(monkeypatch, wrap):
    """GF(2^16) products through ``wrap(original, a, b)`` (GF(2^8) unchanged)."""
    orig = GFField.matmul

    def matmul(self, a, b):
        return wrap(orig, self, a, b) if self.degree == 16 else orig(self, a, b)

    monkeypatch.setattr(GFField, "matmul", matmul)


def _products(deg=16):
    got = calib_measure.Measurement()
    calib_measure.measure_products(deg, True, got, np.random.default_rng(0))
    return got


def test_a_slower_kernel_measures_slower(monkeypatch):
    """The prices are measurements of the kernel that runs.  A product that sleeps ``k``
    times the estimate's ns on top of its work prices at least ``k`` ns per ns (whatever
    the machine's load: a sleep is never shorter); with ``k`` far above what it computes
    (so that the machine's load hardly shows), three times more for ``3 k``."""
    def sleeping(k):
        def sleeps(f, self, a, b):
            cols = b.shape[1] if b.ndim == 2 else 1
            time.sleep(k * 1e-9 * product_ns(a.shape[0], a.shape[1], cols, 16))
            return f(self, a, b)
        return sleeps

    _patched_matmul(monkeypatch, sleeping(20))
    slow = _products()
    monkeypatch.undo()
    assert slow.table["gf2^16_product"] >= 20e-9 and slow.table["gf2^16_map"] >= 20e-9
    assert slow.table["gf2^16_matmul"] == 0.0  # by definition (the estimate counts them)
    small = [(9, 18, 1800), (18, 18, 300)]  # 0.3 ms of estimate in all
    got = {}
    for k in (300, 900):
        _patched_matmul(monkeypatch, sleeping(k))
        got[k] = calib_measure.product_price(F16, small, np.random.default_rng(0))
        monkeypatch.undo()
        assert got[k] >= k * 1e-9
    assert 2.5 < got[900] / got[300] < 3.3, got


def test_a_fit_that_is_not_positive_is_reported(monkeypatch):
    """The scalar kernel's two prices come from a fit (per operand element on one row and
    on six); when the one-row product is the slower (here: it sleeps, far longer than the
    load could slow the six-row one), the per multiply-add fit is negative: set to a
    floor, and reported, not hidden."""
    def one_row_sleeps(f, self, a, b):
        if a.shape[0] == 1:
            time.sleep(10 * SLEEP)
        return f(self, a, b)

    _patched_matmul(monkeypatch, one_row_sleeps)
    got = _products()
    assert "gf2^16_thin" in got.problems and "not > 0" in got.problems["gf2^16_thin"]
    assert got.table["gf2^16_thin"] == calib_measure.FLOORS[FieldOp.THIN]
    assert got.table["gf2^16_thin_operand"] >= 10 * SLEEP / (18 * 8000)  # the sleep, per element
    assert not any(k.startswith("gf2^8") for k in got.problems)
    # an inverse whose small size is the slower: the per-k^3 fit is negative
    orig = GFField.inv

    def small_inverse_sleeps(self, a):
        if self.degree == 16 and a.shape[0] == 12:
            time.sleep(0.5)
        return orig(self, a)

    monkeypatch.setattr(GFField, "inv", small_inverse_sleeps)
    inv = calib_measure.Measurement()
    calib_measure.measure_inverse(16, True, inv)
    assert "gf2^16_inverse" in inv.problems


def test_a_failed_contention_run_is_reported(monkeypatch):
    """A contention mix that cannot run leaves its factors at 1.0 and says so; measure
    warns (strict: raises) instead of passing 1.0 off as a measurement."""
    def dies(mix, cores, quick):
        raise RuntimeError(f"worker of {mix} died")

    monkeypatch.setattr(calib_contention, "_contention", dies)
    factors, problems = calib_contention.measure_contention(quick=True)
    assert factors == {str(c): 1.0 for c in Contention}
    assert set(problems) == set(factors)
    assert all("not measured" in why and "died" in why for why in problems.values())
    # below 1 (noise) is raised to 1 and reported too
    monkeypatch.setattr(calib_contention, "_contention", lambda mix, cores, quick: (0.9, 1.2))
    factors, problems = calib_contention.measure_contention(quick=True)
    assert factors["contention_cores"] == 1.0 and factors["contention_over"] == 1.2
    assert set(problems) == {"contention_cores", "contention_cores_memory"}
    # measure: the problems are warned about, or raised
    flagged = calib_measure.Measurement(dict(W.DEFAULT_SECONDS), {"contention_over": "died"})
    monkeypatch.setattr(calib_measure, "measure_report", lambda quick=False: flagged)
    with pytest.warns(UserWarning, match="contention_over: died"):
        assert calibration.measure(quick=True) == flagged.table
    with pytest.raises(calibration.CalibrationError, match="contention_over: died"):
        calibration.measure(quick=True, strict=True)


def test_quick_calibration_measures_every_key():
    """Every key measured (or reported), and the prices agree with kernels timed here
    independently within 30x: on a loaded shared machine (load average 26 on 2 cores) the
    same RS parity measured 0.8 ms and 30 ms in consecutive calls and a quick calibration's
    product price came out 11x an independent best-of-9, so this catches gross errors
    (units, operation counts), not drift; the injected kernels above check that the prices
    follow the kernels."""
    got = calibration.measure_report(quick=True)
    table = got.table
    assert set(table) == set(calibration.KEYS)
    for key, val in table.items():
        if key.endswith("_matmul"):
            assert val == 0.0  # a calibration prices blocked products by the estimate
        elif key.startswith("contention"):
            assert val >= 1.0
        else:
            assert val > 0 and (key not in got.problems or "not > 0" in got.problems[key])

    def best(fn, reps=9):
        out = []
        for _ in range(reps):
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
        return min(out)

    rng = np.random.default_rng(9)
    a, b = F16.random((40, 120), rng), F16.random((120, 2000), rng)
    took = best(lambda: F16.matmul(a, b))
    priced = W.price(W.product("gf2^16", 40, 120, 2000), table) - table["call"]
    assert took / 30 < priced < took * 30
    from mpi_coded.codes import rs_fft

    code = rs_fft.RSCode(540, 360)
    data = rng.integers(0, 1 << 16, size=(360, 256), dtype=np.uint16)
    took = best(lambda: code.parity(data))
    assert took / 30 < fft_encode_ops(540, 360, 256) * table["rs_fft_encode"] < took * 30


def test_grouped_decoding_lists_a_place_per_partition():
    """Decoding many short partitions stacks each partition's values and places its
    outputs (priced ``place``, not a sub-code ``call``); one sub-code call per pattern."""
    f = get_field("gf2^16")
    p = coded_params("bdc", 9, 6, "1/3", 30, 24, 24, T=120, field="gf2^16")  # (9, 6) codes
    code = build_code(p, f)
    lay = code.layout
    rows = np.flatnonzero(np.isin(lay.row_position, [0, 2, 3, 6, 7, 8])).tolist()
    listed = code.decode_work(rows, 4)
    kernels = [w.kernel for w in listed.work]
    assert kernels.count("place") == lay.T and kernels.count("call") == 1
    assert listed.algorithms == {"generator": 1}


@pytest.mark.parametrize("scheme,T", [("unified", 1), ("bdc", 10), ("bdc", 30)])
def test_reducers_gather_their_values_per_batch_and_decode(scheme, T):
    p = coded_params(scheme, 9, 6, "1/3", 30, 12, 12, T=T, field="gf2^16")
    pl = build_placement(p)
    res = replay_order(pl, [4, 0, 8, 2, 6, 1, 3, 5, 7], seed=3)
    assert res.max_error == 0 and len(res.decoded) == 6
    for red in res.plan.reducers:
        assert 1 <= exchange.reducer_batches(red, pl) <= pl.n_batches


def test_ranks_keep_and_pretouch_their_heap():
    """The runtime's memory policy (glibc): freed memory stays in the rank and setup
    pre-touches the working heap (docs/theory.md (C.4), runtime.core.memory); in a
    subprocess, not to change this test process's malloc."""
    import platform
    import subprocess
    import sys

    code = ("from mpi_coded.runtime.core import memory as m\n"
            "kept = m.retain_freed_memory()\n"
            "print(kept, m.prefault(3 * m.PREFAULT_BLOCK + 5), m.prefault(0))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    kept, touched, none = r.stdout.split()
    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert kept == str(glibc)
    assert int(touched) == (3 * (16 << 20) + 5 if glibc else 0) and int(none) == 0


def test_pricing_a_product_loads_no_gf_kernel():
    """A float64 rank prices its work (the kernels' own estimate, :mod:`mpi_coded.gf_costs`)
    without importing the numba kernels (about a second of a rank's start)."""
    import sys

    from conftest import run_cmd

    code = ("import sys; from mpi_coded.codes import work\n"
            "work.product('float64', 500, 500, 500); work.map_product('gf2^8', 600, 600, 600)\n"
            "print(sorted(m for m in ('numba', 'mpi_coded.gf_kernels') if m in sys.modules))")
    out = run_cmd([sys.executable, "-c", code], timeout=120)  # a fresh interpreter
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    from mpi_coded import gf_costs, gf_kernels

    assert gf_kernels.product_ns is gf_costs.product_ns  # one model, the kernels' own
    assert gf_costs.product_ns(64, 64, 64, 8) > 0 and gf_costs.product_ns(0, 5, 5, 8) == 0.0
