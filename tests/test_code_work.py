"""The work a code lists (``encode_work`` / ``decode_work``) is the work it runs, and the
calibrated model prices it (docs/theory.md (C.4)); the reducers' gather."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mpi_coded.analysis import calibration
from mpi_coded.cli.main import main as cli_main
from mpi_coded.coded import exchange
from mpi_coded.coded.code import ROW_OPERAND, build_code
from mpi_coded.coded.mapend import map_end
from mpi_coded.coded.placement import build_placement
from mpi_coded.coded.replay import replay_order
from mpi_coded.coded.schemes import coded_params
from mpi_coded.coded.shuffle import shuffle_plan
from mpi_coded.codes import work as W
from mpi_coded.errors import ConfigError
from mpi_coded.fields import get_field
from mpi_coded.gf_kernels import _choose, _kernel_costs, product_ns

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
    assert thin[:2] == [W.Work("gf2^16_thin", 36000.0), W.Work("gf2^16_thin_operand", 18000.0)]
    big = W.product("gf2^8", 250, 4096, 1024)
    assert big[0].kernel == "gf2^8_product"
    assert big[0].ops == pytest.approx(product_ns(250, 4096, 1024, 8))
    # the estimate is that of the kernel gf_matmul picks: the cheapest
    costs = _kernel_costs(250, 4096, 1024, 8)
    assert big[0].ops == pytest.approx(costs[_choose(250, 4096, 1024, 8)])
    assert [w.kernel for w in W.inverse("gf2^16", 5)] == ["gf2^16_inverse",
                                                          "gf2^16_inverse_step"]
    table = {"gf2^16_thin": 2.0, "gf2^16_thin_operand": 3.0, "call": 10.0}
    assert W.price(thin, table) == pytest.approx(72000.0 + 54000.0 + 10.0)
    # memory-bound kernels (the scalar product, copies, Python around short codes) and
    # compute-bound ones (blocked products, the RS FFT)
    assert [k for k in ("gf2^16_thin", "gf2^8_thin_operand", "copy", "call", "place",
                        "gf2^16_inverse_step", "gf2^16_matmul", "gf2^8_product",
                        "rs_fft_encode") if W.memory_bound(k)] == [
        "gf2^16_thin", "gf2^8_thin_operand", "copy", "call", "place", "gf2^16_inverse_step"]
    mixed = [W.Work("copy", 30.0), W.Work("rs_fft_encode", 10.0)]
    assert W.memory_share(mixed, {"copy": 1.0, "rs_fft_encode": 7.0}) == pytest.approx(0.3)
    assert W.memory_share([], table) == 0.0


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
    assert alone["encoder"] == "systematic+rs_fft" and alone["decoder"] == "rs_fft"
    assert alone["wall"]["encode"] == pytest.approx(alone["per_server"]["encode"])
    for ph in ("encode", "map", "reduce"):
        assert alone["per_server"][ph] <= shared["wall"][ph] <= 9 * alone["wall"][ph]
    # the slowest server's encoding is its listed work, priced
    jw = calibration.job_work(p)
    assert jw is not None
    assert alone["per_server"]["encode"] == pytest.approx(
        max(w.seconds(table) for w in jw.encode))
    # dearer FFT decoding: dearer reduce, same encode
    dear = calibration.predict_seconds(p, {**table, "rs_fft_decode": 1e-6})
    assert dear["wall"]["reduce"] > 10 * alone["wall"]["reduce"]
    assert dear["wall"]["encode"] == pytest.approx(alone["wall"]["encode"])


def test_lt_falls_back_to_operation_counts():
    p = coded_params("lt", 6, 4, "1/2", 4, 8, 8, field="gf2^8")
    assert calibration.job_work(p) is None
    secs = calibration.predict_seconds(p, dict(W.DEFAULT_SECONDS), cores=2)
    assert secs["wall"]["map"] > 0 and secs["encoder"] == "generator"


def test_calibration_file_version_and_keys(tmp_path):
    table = {k: 1.0 if k.startswith("contention") else 1e-9 for k in calibration.KEYS}
    path = tmp_path / "cal.json"
    calibration.write(table, path)
    assert calibration.load(path) == table
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"version": 1, "seconds_per_op": table}))
    with pytest.raises(ConfigError, match="version 1"):
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


def test_quick_calibration_measures_every_key():
    table = calibration.measure(quick=True)
    assert set(table) == set(calibration.KEYS)
    assert all(v > 0 for v in table.values())
    assert all(table[k] >= 1.0 for k in table if k.startswith("contention"))


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
