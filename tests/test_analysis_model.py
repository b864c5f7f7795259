"""The analytic model (load, servers needed, D = D_encode + D_map + D_reduce) and
``mpi-coded model`` (docs/theory.md (B.6))."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpi_coded import cli
from mpi_coded.analysis import delay, solvers
from mpi_coded.analysis.bdc_load import make_instance
from mpi_coded.analysis.loads import lt_load, unified_load
from mpi_coded.analysis.model import (
    MODEL_SCHEMES,
    ModelSetting,
    model_params,
    predict,
)
from mpi_coded.cli.analysis import register
from mpi_coded.coded.schemes import coded_params
from mpi_coded.codes import lt
from mpi_coded.errors import EXIT_BAD_INPUT


def paper(scheme, **kw):
    """the BDC paper's setting: K = 9, q = 6, mu = 1/3, eta_b = 250, m = n = N = 6000."""
    return model_params(scheme, 9, 6, "1/3", rows_per_batch=250, **kw)


def test_paper_setting_sizes():
    mp = paper("bdc", T=250)
    p = mp.params
    assert (p.m, p.n, p.N, p.r, p.rows_per_batch) == (6000, 6000, 6000, 9000, 250)
    assert mp.field_name == "gf2^16" and mp.l == 16


@pytest.mark.parametrize("T", [1, 10, 125, 250])
def test_paper_setting_loads(T):
    out = predict(paper("bdc", T=T))
    assert out.load_exact == Fraction(11, 24) and out.load == pytest.approx(0.458333, abs=5e-7)
    assert out.servers_needed == 6.0 and out.exact
    assert out.to_dict()["load_exact"] == "11/24"  # the JSON object's fraction string
    assert predict(paper("unified")).load == pytest.approx(11 / 24)


def test_every_scheme_adds_up():
    for scheme in MODEL_SCHEMES:
        out = predict(paper(scheme, T=250 if scheme == "bdc" else 1))
        d = out.delay
        assert d.total == pytest.approx(d.encode + d.map + d.reduce)
        assert all(v >= 0 for v in d.to_dict().values())
        assert 0 < out.load < 1
    for scheme, g in [("uc", 9), ("cmr", 9), ("sc", 6), ("unified", 6)]:
        assert predict(paper(scheme)).servers_needed == g


def test_phase_formulas_pinned_to_the_paper_setting():
    sa, sm = delay.field_op_costs(16)
    m = n = N = 6000
    uni = predict(paper("unified"))
    # map: mu m = 2000 stored rows, inner products of length n for N vectors, 6th of 9
    sigma_map = 2000 * N * ((n - 1) * sa + n * sm)
    assert uni.sigma.map == pytest.approx(sigma_map)
    assert uni.delay.map == pytest.approx(1.995635 * sigma_map, rel=1e-6)
    # encode over GF(2^16): the FFT (n columns, eq. (10)'s curve of the length-9000 code),
    # cheaper than a dense row of m products per column; wait for all 9 servers
    sigma_enc = n * delay.fft_decode_ops(9000).cost(sa, sm)
    assert sigma_enc < 2000 * n * ((m - 1) * sa + m * sm)
    assert uni.encoder == "fft"
    assert uni.delay.encode == pytest.approx(sigma_enc * delay.order_stat_mean(9, 9))
    # reduce: FFT decoding of the length-9000 code, N/q outputs each; wait for all 6
    per_output = delay.fft_decode_ops(9000).cost(sa, sm)
    assert uni.decoder == "fft"
    assert uni.delay.reduce == pytest.approx(
        per_output * N / 6 * delay.order_stat_mean(6, 6))
    # uncoded baselines neither encode nor decode
    for scheme in ("uc", "cmr"):
        out = predict(paper(scheme))
        assert out.delay.encode == out.delay.reduce == 0
        assert out.delay.map == pytest.approx(
            out.sigma.map * delay.order_stat_mean(9, 9))


def test_bdc_saves_encoding_and_decoding():
    uni = predict(paper("unified"))
    assert predict(paper("bdc", T=1)).delay.to_dict() == pytest.approx(uni.delay.to_dict())
    sa, sm = delay.field_op_costs(16)
    dense = 2000 * 6000 * (6000 * sm + 5999 * sa)
    for T in (10, 250):
        bdc = predict(paper("bdc", T=T))
        # eq. (8) with m/T nonzeros per row, or T FFT codewords per column if cheaper
        gen = 2000 * 6000 * (6000 / T * sm + (6000 / T - 1) * sa)
        fft = 6000 * T * delay.fft_decode_ops(9000 / T).cost(sa, sm)
        assert bdc.encoder == ("fft" if fft < gen else "generator")
        assert bdc.delay.encode == pytest.approx(
            min(gen, fft) * delay.order_stat_mean(9, 9))
        assert bdc.delay.encode < dense * delay.order_stat_mean(9, 9)
        assert bdc.delay.reduce < uni.delay.reduce
        assert bdc.delay.total < uni.delay.total


def test_bdc_map_delay_averages_over_the_servers_needed():
    mp = paper("bdc", T=3000)
    out = predict(mp)
    pmf = {int(g): p for g, p in out.servers_needed_pmf.items()}
    assert len(pmf) > 1 and min(pmf) == 6
    want = sum(p * delay.order_stat_mean(9, g, out.sigma.map) for g, p in pmf.items())
    assert out.delay.map == pytest.approx(want)
    assert out.delay.map > predict(paper("unified")).delay.map
    assert out.servers_needed == pytest.approx(sum(g * p for g, p in pmf.items()))
    # another assignment changes the prediction through P
    inst = make_instance(9, 6, "1/3", 250, 3000)
    P = solvers.solve_random(inst, 1).P
    assert predict(mp, assignment=P).load != out.load


def test_lt():
    out = predict(paper("lt"))
    eps = lt.design_overhead(6000)
    assert out.eps == pytest.approx(eps) and out.decoder == "peeling"
    assert out.load == pytest.approx(lt_load(9, 6, "1/3", eps))
    assert lt_load(9, 6, "1/3", 0.0) == pytest.approx(float(unified_load(9, 6, "1/3").load))
    # a larger overhead never lowers the load or the servers waited for
    loads = [lt_load(9, 6, "1/3", e) for e in np.linspace(0, 0.49, 25)]
    assert all(a <= b + 1e-12 for a, b in zip(loads, loads[1:]))
    g = [predict(paper("lt", eps=e)).servers_needed for e in (0.0, 0.3, 0.45)]
    assert g == sorted(g) and g[0] == 6 and g[-1] > 6
    # the inactivation decoder's small overhead makes LT's load nearly the unified one
    assert predict(paper("lt", eps=0.003)).load < out.load


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 8).flatmap(lambda K: st.tuples(
    st.just(K), st.integers(1, K).flatmap(lambda q: st.tuples(st.just(q), st.integers(1, q))))),
    st.floats(0.0, 0.5))
def test_lt_load_matches_spec_b3_at_zero_overhead(kq, eps):
    K, (q, p) = kq
    mu = Fraction(p, q)
    assert lt_load(K, q, mu, 0.0) == pytest.approx(float(unified_load(K, q, mu).load))
    assert lt_load(K, q, mu, eps) >= lt_load(K, q, mu, 0.0) - 1e-12


def test_shift_only_variant_is_faster_for_large_sigma():
    a = predict(paper("bdc", T=250))
    b = predict(paper("bdc", T=250, scale_tail=False))
    assert b.delay.total < a.delay.total
    assert b.delay.map == pytest.approx(
        b.sigma.map + delay.order_stat_mean(9, 6) - 1.0)


def test_from_runtime_parameters():
    params = coded_params("bdc", 9, 6, "1/3", 250, n=6000, N=6000, T=250)
    assert predict(params) == predict(paper("bdc", T=250))
    assert ModelSetting(params).params.m == 6000


def test_default_sizes_are_the_smallest_valid():
    mp = model_params("bdc", 9, 6, "1/3", T=7).params
    assert mp.m % 7 == 0 and mp.r % 7 == 0 and mp.r % mp.n_batches == 0
    assert mp.n == mp.N == mp.m
    smaller = [m for m in range(1, mp.m) if m % 7 == 0 and (m * 9) % 6 == 0
               and (m * 9 // 6) % (36 * 7) == 0]
    assert smaller == []


# --- mpi-coded model ------------------------------------------------------------------------


def run(argv):
    """The real command line (``model`` and ``solve`` are wired into cli.main)."""
    return cli.main(argv)


BASE = ["model", "--K", "9", "--q", "6", "--mu", "1/3", "--rows-per-batch", "250"]


@pytest.mark.parametrize("scheme", MODEL_SCHEMES)
def test_model_json(capsys, scheme):
    extra = ["--T", "250"] if scheme == "bdc" else []
    assert run(BASE + ["--scheme", scheme, "--json"] + extra) == 0
    text = capsys.readouterr().out
    assert text.count("\n") == 1
    obj = json.loads(text)
    assert list(obj) == ["scheme", "load", "servers_needed", "delay"]
    assert list(obj["delay"]) == ["encode", "map", "reduce", "total"]
    want = predict(paper(scheme, T=250 if scheme == "bdc" else 1))
    assert obj["scheme"] == scheme and obj["load"] == want.load
    assert obj["delay"] == want.delay.to_dict()
    full = want.to_dict()  # the typed prediction gives the old nested dict
    assert list(full) == ["scheme", "load", "servers_needed", "delay", "field", "l",
                          "convention", "encoder", "ops", "sigma", "decoder",
                          "servers_needed_pmf", "load_exact", "exact", "eps"]
    assert json.loads(json.dumps({k: full[k] for k in obj})) == obj


def test_model_readable(capsys):
    assert run(BASE + ["--scheme", "bdc", "--T", "250"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "bdc: K=9 q=6 mu=1/3 m=6000 n=6000 N=6000 T=250 field=gf2^16"
    assert out[1].startswith("  load 11/24 (0.458333)  servers_needed 6.0000")
    assert out[2].startswith("  delay  encode ") and "total" in out[2]


def test_model_with_a_saved_assignment(capsys, tmp_path):
    inst = make_instance(9, 6, "1/3", 250, 3000)
    sol = solvers.hybrid(inst, iterations=50)
    path = tmp_path / "P.npy"
    solvers.save_assignment(path, sol.P)
    assert run(BASE + ["--scheme", "bdc", "--T", "3000", "--assignment", str(path),
                       "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["load"] == pytest.approx(float(sol.load))


@pytest.mark.parametrize("argv,needle", [
    (["--scheme", "bdc", "--T", "7"], "T: T must divide m = 6000"),
    (["--scheme", "unified", "--T", "2"], "T: partitions apply only to scheme bdc"),
    (["--scheme", "bdc", "--mu", "1/4"], "mu: mu * q must be an integer"),
    (["--scheme", "sc", "--q", "10"], "q: must satisfy q <= K"),
    (["--scheme", "uc", "--K", "4", "--q", "3", "--mu", "2/3", "--rows-per-batch", "1"],
     "rows_per_batch: m = rows_per_batch * C(K, 2) * q / K must be an integer"),
    (["--scheme", "uc", "--m", "100"], "m: give either m or rows_per_batch"),
    (["--scheme", "uc", "--n", "0"], "n: must be an integer >= 1"),
    (["--scheme", "lt", "--eps", "0.6"], "eps: m (1 + eps) must not exceed the r = 9000"),
    (["--scheme", "lt", "--eps", "nan"], "eps: must be a number >= 0"),
    (["--scheme", "lt", "--delta", "2"], "delta: must be in (0, 1)"),
    (["--scheme", "unified", "--field", "gf2^8"], "field: gf2^8 holds MDS codes of length"),
    (["--scheme", "bdc", "--field", "gf2^9"], "field: must be one of"),
    (["--scheme", "uc", "--assignment", "P.npy"], "assignment: only scheme bdc"),
    (["--scheme", "bdc", "--assignment", "/nonexistent/P.npy"], "assignment: cannot read"),
    (["--scheme", "bdc", "--samples", "0"], "samples: must be >= 1"),
])
def test_model_bad_input(capsys, argv, needle):
    code = run(BASE + argv)
    assert code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


@pytest.mark.parametrize("argv", [
    BASE + ["--scheme", "rs"],
    ["model", "--scheme", "bdc", "--q", "6", "--mu", "1/3"],
    BASE + ["--scheme", "bdc", "--T", "x"],
])
def test_model_bad_arguments_one_line(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        run(argv)
    assert exc.value.code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error:" in err


def test_lt_servers_by_rows():
    # at eps the first g >= q servers hold ceil(m (1 + eps)) rows: 250 (36 - C(9 - g, 2))
    for eps, g in [(0.0, 6), (0.375, 6), (0.376, 7), (0.45, 7)]:
        need = math.ceil(6000 * (1 + eps))
        assert 250 * (36 - math.comb(9 - g, 2)) >= need
        assert g == 6 or 250 * (36 - math.comb(9 - g + 1, 2)) < need
        assert predict(paper("lt", eps=eps)).servers_needed == g


def test_register_adds_both_commands(capsys):
    parser = cli.OneLineParser(prog="mpi-coded")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=cli.OneLineParser)
    register(sub)
    for argv in (BASE + ["--scheme", "uc", "--json"],
                 ["solve", "--K", "4", "--q", "2", "--mu", "1", "--rows-per-batch", "2", "--T",
                  "6", "--solver", "heuristic", "--json"]):
        args = parser.parse_args(argv)
        assert args.func(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert json.loads(lines[0])["scheme"] == "uc" and json.loads(lines[1])["solver"] == "heuristic"
