"""The RS FFT sub-code in the coded job, the cost rule choosing paths, the model's FFT
encoding and the authors' conventions (docs/theory.md (B.1), (B.6), (C.1), (C.2), (C.4))."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from mpi_coded.analysis.model import model_params, predict
from mpi_coded.cli.main import main as cli_main
from mpi_coded.coded.code import algorithm_mask, algorithm_names, build_code
from mpi_coded.coded.schemes import coded_params
from mpi_coded.codes.cauchy import CauchyCode
from mpi_coded.codes.rs_sub import RSSubCode, prefer_rs
from mpi_coded.errors import ConfigError, NotDecodable
from mpi_coded.fields import get_field

F16 = get_field("gf2^16")


def test_every_erasure_pattern_of_a_small_code_both_paths():
    rng = np.random.default_rng(0)
    sub = RSSubCode(F16, 7, 4)
    msg = F16.random((4, 5), rng)
    word = sub.encode_rows(range(7), msg)
    assert np.array_equal(word, F16.matmul(sub.generator(), msg))
    fft_only = {"rs_fft_decode": 1e-12, "gf2^16_inverse": 1.0}
    gen_only = {"rs_fft_decode": 1.0, "gf2^16_inverse": 1e-12}
    for pos in itertools.combinations(range(7), 4):
        for table, name in ((fft_only, "rs_fft"), (gen_only, "generator")):
            sub.table = table
            got = sub.decode(list(pos)[::-1], word[list(pos)[::-1]])
            assert np.array_equal(got, msg)
            assert sub.last_decoder == ("systematic" if pos == (0, 1, 2, 3) else name)
    with pytest.raises(NotDecodable):
        sub.decode([0, 1, 2], word[:3])


@pytest.mark.parametrize("scheme,T,K,q,mu,rpb", [
    ("unified", 1, 9, 6, "1/3", 30),   # (1080, 720): the bench's m = 720
    ("bdc", 10, 9, 6, "1/3", 30),      # (108, 72) partitions
    ("sc", 1, 9, 6, "1/3", 30),        # (9, 6) stripes
    ("unified", 1, 6, 4, "1/2", 20),
])
def test_partition_code_over_gf16_round_trips(scheme, T, K, q, mu, rpb):
    rng = np.random.default_rng(1)
    p = coded_params(scheme, K, q, mu, rpb, 40, q * 2, T=T, field="gf2^16")
    code = build_code(p, F16)
    A = F16.random((p.m, p.n), rng)
    X = F16.random((p.n, 3), rng)
    rows = sorted(rng.choice(p.r, p.r // 3, replace=False).tolist())
    full = code.encode(A)
    assert np.array_equal(code.encode(A, rows), full[rows])
    if p.r * p.m <= 2_000_000:
        assert np.array_equal(full, F16.matmul(code.psi(), A))
    lay = code.layout
    sel = [int(x) for t in range(lay.T)
           for x in rng.choice(lay.coded_rows(t), lay.k, replace=False)]
    y = code.decode(sel, F16.matmul(full[sel], X))
    assert np.array_equal(y, F16.matmul(A, X))
    assert set(code.decoders) <= {"systematic", "generator", "rs_fft"}
    with pytest.raises(NotDecodable):
        code.decode(sel[:-1], F16.matmul(full[sel[:-1]], X))


def test_the_cost_rule_picks_paths_per_partition_shape():
    paper = dict(K=9, q=6, mu="1/3", rows_per_batch=250, n=6000, N=6000, field="gf2^16")
    uni = coded_params("unified", **paper)
    assert isinstance(build_code(uni).sub, RSSubCode)  # type: ignore[attr-defined]
    bdc = coded_params("bdc", T=1000, **paper)  # (9, 6) partitions: generator path
    assert isinstance(build_code(bdc).sub, CauchyCode)  # type: ignore[attr-defined]
    assert prefer_rs(900, 600, 6000, 1000)
    small8 = coded_params("unified", 6, 4, "1/2", 4, 30, 12)
    assert small8.field_name == "gf2^8"
    assert isinstance(build_code(small8).sub, CauchyCode)  # type: ignore[attr-defined]
    # auto: gf2^16 where the code needs it or the RS path saves real time
    assert coded_params("unified", 9, 6, "1/3", 250, 6000, 6000).field_name == "gf2^16"
    assert coded_params("bdc", 9, 6, "1/3", 250, 6000, 6000, T=1000).field_name == "gf2^8"
    assert coded_params("bdc", 9, 6, "1/3", 250, 100, 6, T=100).field_name == "gf2^16"


def test_unified_encoding_is_the_fft_parity_not_a_dense_product():
    rng = np.random.default_rng(2)
    p = coded_params("unified", 9, 6, "1/3", 30, 200, 6, field="gf2^16")
    code = build_code(p)
    A = F16.random((p.m, p.n), rng)
    rows = list(range(p.m - 5, p.r))  # data and all parity rows
    got = code.encode(A, rows)
    assert code.encoders == {"rs_fft": 1}
    assert np.array_equal(got[:5], A[-5:])
    assert np.array_equal(got, F16.matmul(code.psi()[rows], A))
    code.encode(A, [p.m, p.m + 1])  # two parity rows: two generator rows are cheaper
    assert code.encoders == {"generator": 1}
    assert algorithm_names(algorithm_mask({"rs_fft": 1, "systematic": 2})) == "systematic+rs_fft"


# --- the model ------------------------------------------------------------------------

def ratio(scheme, T=1, **kw):
    def total(s, t):
        mp = model_params(s, 9, 6, "1/3", rows_per_batch=250, T=t, **kw)
        return predict(mp).delay.total
    return total(scheme, T) / total("uc", 1)


@pytest.mark.parametrize("scheme,T,want", [
    ("unified", 1, 1.603761), ("sc", 1, 0.785803), ("cmr", 1, 2.000006),
    ("bdc", 10, 1.964953), ("bdc", 100, 1.603721)])
def test_authors_reference_values(scheme, T, want):
    """docs/theory.md (C.2): the authors' conventions reproduce their D / D_UC."""
    assert ratio(scheme, T, convention="authors") == pytest.approx(want, abs=2e-6)
    assert ratio(scheme, T, convention="authors", degree=14) == pytest.approx(want, abs=2e-6)


def test_l14_reproduces_the_authors_unified_ratio_with_the_repository_model():
    assert ratio("unified", degree=14) == pytest.approx(1.60376, abs=1e-4)
    out = predict(model_params("unified", 9, 6, "1/3", rows_per_batch=250))
    assert out.encoder == "fft" and out.l == 16  # the runtime's field: FFT encoding


def test_model_cli_l_and_bad_input(capsys):
    base = ["model", "--scheme", "unified", "--K", "9", "--q", "6", "--mu", "1/3",
            "--rows-per-batch", "250"]
    assert cli_main([*base, "--l", "14", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["D_over_uc"] == pytest.approx(1.60376, abs=1e-4) and out["l"] == 14
    assert cli_main([*base, "--l", "8"]) == 2  # GF(2^8) cannot hold a length-9000 code
    assert capsys.readouterr().err.startswith("mpi-coded: error: l:")
    with pytest.raises(SystemExit) as exc:
        cli_main([*base, "--convention", "x"])
    assert exc.value.code == 2


# --- bad input of the job ---------------------------------------------------------------

@pytest.mark.parametrize("kw,key", [
    (dict(scheme="unified", field="gf2^8", rows_per_batch=250), "field"),  # r = 9000 > 256
    (dict(scheme="bdc", T=7, rows_per_batch=250), "T"),
])
def test_job_bad_input_names_the_parameter(kw, key):
    args = dict(K=9, q=6, mu="1/3", n=10, N=6)
    args.update(kw)
    with pytest.raises(ConfigError) as exc:
        coded_params(**args)
    assert exc.value.field == key


def test_padding_warning_names_an_even_batch_size():
    from mpi_coded.runtime.coded.setup import padding_warning

    msg = padding_warning(coded_params("unified", 10, 9, "1/3", 1, 5, 9))
    assert msg is not None and "7/9" in msg and "49/162" in msg
    assert "--rows-per-batch 6 splits every segment evenly" in msg
    assert padding_warning(coded_params("unified", 6, 4, "1/2", 4, 5, 12)) is None
