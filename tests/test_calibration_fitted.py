"""The calibrated model fitted on short runs of the job itself (docs/theory.md (C.5)): its
features, the fit of two class multipliers (recovered exactly from synthetic phases,
checked on held-out T), the classes it cannot identify, the measured overhead, and the
summary across independent runs with the spread.  No MPI."""

from __future__ import annotations

import math

import pytest

from mpi_coded.analysis import calibration
from mpi_coded.analysis.calibration import fitted
from mpi_coded.coded.schemes import coded_params
from mpi_coded.codes.prices import DEFAULT, FieldOp, Kernel
from mpi_coded.codes.work import Work

M, ETA = 720, 30  # the scaled instance at m = 720: K = 9, q = 6, mu = 1/3
TRAIN, HELD_OUT = (1, 6, 20, 120), (10, 30, 60)
THETA = {"fft_encode": 0.37, "fft_decode": 0.8, "product": 1.6, "scalar": 2.1, "python": 0.7}


@pytest.fixture(scope="module")
def feats() -> dict[int, fitted.Features]:
    out = {}
    for T in (*TRAIN, *HELD_OUT):
        p = coded_params("unified" if T == 1 else "bdc", 9, 6, "1/3", ETA, M, M, T=T,
                         field="gf2^16")
        out[T] = calibration.features(p, DEFAULT)
    return out


def test_work_class() -> None:
    assert fitted.work_class(Kernel.RS_FFT_ENCODE) == "fft_encode"
    assert fitted.work_class(Kernel.RS_FFT_DECODE) == "fft_decode"
    assert fitted.work_class(Kernel.GF16_PRODUCT) == "product"
    assert fitted.work_class(Kernel.GF8_MATMUL) == "product"
    assert fitted.work_class(Kernel.gf("gf2^16", FieldOp.MAP)) == "map"
    for k in (Kernel.COPY, Kernel.GF16_THIN, Kernel.GF8_THIN_OPERAND):
        assert fitted.work_class(k) == "scalar"
    for k in (Kernel.CALL, Kernel.PLACE, Kernel.GF16_INVERSE, Kernel.GF8_INVERSE_STEP):
        assert fitted.work_class(k) == "python"
    for k in Kernel:  # every kernel has a kind
        assert fitted.work_class(k) in (*fitted.KIND_NAMES, "map")
    cs = fitted.class_seconds([Work(Kernel.COPY, 1e9), Work(Kernel.RS_FFT_DECODE, 1e9)],
                              DEFAULT)
    assert cs["scalar"] == pytest.approx(1.0) and cs["fft_decode"] == pytest.approx(5.0)
    assert cs["map"] == 0.0 and cs["product"] == 0.0


def test_features_follow_the_codes(feats: dict[int, fitted.Features]) -> None:
    # unified: the RS FFT; many short partitions: copies, calls, small inverses
    assert feats[1].shares()["encode"]["fft_encode"] > 0.8
    assert feats[1].shares()["reduce"]["fft_decode"] > 0.8
    sh = feats[120].shares()["reduce"]
    assert sh["scalar"] + sh["python"] > 0.5
    assert len(feats[1].encode) == 9 and len(feats[1].map) == 9
    assert len(feats[1].reduce) == 3  # finishing orders
    for f in feats.values():
        for ph in ("encode", "reduce"):
            assert sum(f.shares()[ph].values()) == pytest.approx(1.0)


def test_fit_recovers_multipliers_and_predicts_held_out(
        feats: dict[int, fitted.Features]) -> None:
    true = fitted.FittedModel(theta=THETA, map=1.4, overhead_s=0.004, cores=2)
    obs = [fitted.Observation(str(T), feats[T], true.predict(feats[T])) for T in TRAIN]
    got = calibration.fit(obs, cores=2, overhead_s=0.004)
    for k in set(fitted.KIND_NAMES) - set(got.fixed):
        assert got.theta[k] == pytest.approx(THETA[k], rel=1e-3), k
    assert got.map == pytest.approx(1.4, rel=1e-6)
    for T in HELD_OUT:
        assert got.ratio(feats[T], feats[1]) == pytest.approx(true.ratio(feats[T], feats[1]),
                                                              rel=1e-4)
    for ph in got.training.values():
        assert ph["encode"] == pytest.approx(1.0, rel=1e-3)
    again = fitted.FittedModel.from_dict(got.to_dict())
    assert again.predict(feats[30]) == pytest.approx(got.predict(feats[30]))


def test_fit_is_robust_to_noise(feats: dict[int, fitted.Features]) -> None:
    """10% errors on the training phases move the held-out ratios by much less than 20%."""
    true = fitted.FittedModel(theta=THETA, overhead_s=0.002, cores=2)
    noise = [1.1, 0.9, 0.95, 1.08, 1.05, 0.92, 1.02, 0.97]
    obs = []
    for i, T in enumerate(TRAIN):
        pred = true.predict(feats[T])
        obs.append(fitted.Observation(str(T), feats[T], {
            "encode": pred["encode"] * noise[2 * i], "reduce": pred["reduce"] * noise[2 * i + 1]}))
    got = calibration.fit(obs, cores=2, overhead_s=0.002)
    for T in HELD_OUT:
        r_true, r_got = true.ratio(feats[T], feats[1]), got.ratio(feats[T], feats[1])
        assert abs(r_got / r_true - 1) < 0.12


def test_a_class_not_identified_keeps_one(feats: dict[int, fitted.Features]) -> None:
    # unified alone: only the RS FFT, so the other kinds are not identified
    true = fitted.FittedModel(theta={"fft_encode": 0.6, "fft_decode": 1.3}, cores=2)
    got = calibration.fit([fitted.Observation("1", feats[1], true.predict(feats[1]))], cores=2)
    assert got.fixed == ("product", "scalar", "python")
    assert got.multipliers()[2:] == (1.0, 1.0, 1.0)
    assert got.theta["fft_encode"] == pytest.approx(0.6, rel=1e-3)
    assert got.theta["fft_decode"] == pytest.approx(1.3, rel=1e-3)


def test_fit_rejects_bad_measurements(feats: dict[int, fitted.Features]) -> None:
    with pytest.raises(ValueError, match="at least one"):
        calibration.fit([], cores=2)
    with pytest.raises(ValueError, match="reduce"):
        calibration.fit([fitted.Observation("1", feats[1], {"encode": 0.1, "reduce": 0.0})], 2)


def test_a_core_each_is_the_slowest_server(feats: dict[int, fitted.Features]) -> None:
    m = fitted.FittedModel(cores=None)
    assert m.phase(feats[1], "encode") == pytest.approx(max(sum(s) for s in feats[1].encode))
    shared = fitted.FittedModel(cores=2)
    assert shared.phase(feats[1], "encode") > m.phase(feats[1], "encode")
    with pytest.raises(KeyError):
        m.phase(feats[1], "shuffle")


def test_phase_overhead() -> None:
    recs = [{"encode_s": 0.10, "server_encode_s": {"0": 0.05, "1": 0.09},
             "reduce_s": 0.05, "server_decode_s": {"2": 0.047}},
            {"encode_s": 0.2, "server_encode_s": {"0": 0.195}, "reduce_s": 0.04,
             "server_decode_s": {}}]
    assert calibration.phase_overhead(recs) == pytest.approx(0.005)
    assert calibration.phase_overhead([]) == 0.0
    assert calibration.phase_overhead([{"encode_s": 0.1, "server_encode_s": {"0": 0.2}}]) == 0


def test_spread() -> None:
    s = calibration.spread([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (s["median"], s["q1"], s["q3"], s["iqr"], s["n"]) == (3.0, 2.0, 4.0, 2.0, 5)
    assert s["rel_iqr"] == pytest.approx(2 / 3)
    s3 = calibration.spread([0.9, 1.0, 1.2])
    assert s3["q1"] == pytest.approx(0.95) and s3["q3"] == pytest.approx(1.1)
    with pytest.raises(ValueError):
        calibration.spread([])


def _run(meas: dict[str, float], model: dict[str, float]) -> dict:
    return {"ratio_measured": meas, "ratio_model": model, "ratio_table_model": model,
            "reps": {"1": [1.0, 1.1, 0.9], **{T: [v, v * 1.05] for T, v in meas.items()}}}


def test_summarize_runs() -> None:
    runs = [_run({"10": 0.90, "100": 0.5}, {"10": 0.95, "100": 0.8}),
            _run({"10": 1.00, "100": 1.0}, {"10": 1.00, "100": 0.8}),
            _run({"10": 0.96, "100": 1.5}, {"10": 0.97, "100": 0.8})]
    s = calibration.summarize_runs(runs)
    assert s["runs"] == 3 and s["tolerance"] == fitted.TOLERANCE
    a, b = s["per_T"]["10"], s["per_T"]["100"]
    assert a["measured"]["median"] == pytest.approx(0.96)
    assert a["model"]["median"] == pytest.approx(0.97)
    assert a["comparable"] and a["within"] and a["held"]
    assert not a["distinguishable"]  # 0.96 against 1 with an IQR of 0.05
    assert a["pooled_ratio"] == pytest.approx(0.98)  # pooled reps: 0.9 .. 1.05, unified 1
    assert a["measured_per_run"] == [0.9, 1.0, 0.96]
    # T = 100: the measured ratio moves by 2x between runs: no claim either way
    assert not b["comparable"] and not b["held"]
    assert not s["all_held"]
    # fewer runs than MIN_RUNS are never comparable
    one = calibration.summarize_runs(runs[:1])
    assert not one["per_T"]["10"]["comparable"]
    with pytest.raises(ValueError):
        calibration.summarize_runs([])


def test_summarize_off_by_more_than_tolerance() -> None:
    runs = [_run({"75": v}, {"75": 0.6}) for v in (0.98, 1.0, 1.02)]
    row = calibration.summarize_runs(runs)["per_T"]["75"]
    assert row["comparable"] and not row["within"] and not row["held"]
    assert math.isclose(row["model_over_measured"], 0.6)


def test_load_normalized() -> None:
    recs = [{"encode_s": 0.1, "reduce_s": 0.05, "map_s": 2.0},
            {"encode_s": 0.2, "reduce_s": 0.10, "map_s": 4.0}]  # a repetition slowed 2x
    assert calibration.fitted.load_normalized(recs, "encode_reduce", 2.0) == \
        pytest.approx([0.15, 0.15])
    assert calibration.fitted.load_normalized(recs, "encode", 1.0) == pytest.approx([0.05, 0.05])
    assert calibration.fitted.load_normalized(recs, "reduce", 4.0) == pytest.approx([0.1, 0.1])


def test_median_model_takes_each_multiplier_s_median() -> None:
    fits = [fitted.FittedModel(theta={"fft_encode": a, "python": b}, map=mp, overhead_s=o,
                               cores=c, fixed=f)
            for a, b, mp, o, c, f in ((0.4, 7.5, 0.8, 0.004, 2, ("scalar",)),
                                      (0.6, 2.0, 0.9, 0.007, 4, ()),
                                      (0.5, 5.5, 1.3, 0.001, 4, ()))]
    m = fitted.median_model(fits)
    assert m.theta["fft_encode"] == pytest.approx(0.5)
    assert m.theta["python"] == pytest.approx(5.5)
    assert m.theta["product"] == 1.0  # missing in every fit: 1
    assert m.map == pytest.approx(0.9) and m.overhead_s == pytest.approx(0.004)
    assert m.cores == 2 and m.fixed == ("scalar",)  # the first fit's
    with pytest.raises(ValueError, match="no models"):
        fitted.median_model([])
