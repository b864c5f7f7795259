"""A calibrated model fitted on short runs of the job itself (docs/theory.md (C.5)).

The table model (:mod:`.predict`) prices every call with 20 kernel prices and 4 contention
factors measured once in microbenchmarks; on a shared 2-core machine those move with the
minute they were measured in, and a ratio of two ~0.1 s phases built from them moved with
them (issue 19).  This model keeps the *work* the runtime really does (the same call lists,
:func:`~mpi_coded.analysis.calibration.predict.job_work`) and the relative prices *within*
a kind of kernel from a fixed base table, and fits one multiplier per kind (:data:`KINDS`)
on the measured phases of a few short jobs at training settings:

* ``fft_encode``, ``fft_decode``: the RS FFT encoder and decoder;
* ``product``: the blocked GF products;
* ``scalar``: the memory-bound per-element work, the scalar kernel of a few rows and the
  copies (gathers of rows of ``A``);
* ``python``: per-call work, the Python around a sub-code (``call``, ``place``) and
  galois's small inverses (``inverse``, ``inverse_step``);
* ``map`` (not fitted on the encode and reduce): the map's chunks, only the map phase;
* ``overhead_s``: the seconds a phase lasts beyond its slowest server's own work (the
  phase order and the answers), *measured* from the training records as the median of the
  master-observed phase minus the slowest server's own seconds, not fitted.

A server's seconds in a phase are ``sum_k theta_k x_{s,k}`` (``x_{s,k}``: its base seconds
of kind ``k``); the phase's wall is the processor-sharing makespan of the servers
computing in it on ``cores`` cores (:func:`~mpi_coded.analysis.calibration.predict.
shared_wall` with no contention factor: the multipliers absorb it) plus ``overhead_s``; the
reduce is the mean over a few seeded finishing orders.  The multipliers are fitted by least
squares on the logarithms of predicted over measured encode and reduce medians (relative
errors, so that a long phase does not outweigh a short one).  A kind is *identified* when
it holds at least :data:`IDENTIFIED_SHARE` of the base seconds of some training phase;
one that is not keeps multiplier 1 and is reported (:attr:`FittedModel.fixed`).  Check it
on held-out settings (other ``T``): :func:`summarize_runs` compares the model's
BDC-over-unified ratio with the measured one across independent runs, with the spread.

Pure: no mpi4py.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpi_coded.analysis.calibration.predict import JobWork, job_work, shared_wall
from mpi_coded.codes.prices import CostTable, FieldOp, Kernel
from mpi_coded.codes.work import Table, Work, price

KINDS: Mapping[str, frozenset[Kernel]] = {
    "fft_encode": frozenset({Kernel.RS_FFT_ENCODE, Kernel.RS_FFT_ENCODE_LARGE}),
    "fft_decode": frozenset({Kernel.RS_FFT_DECODE}),
    "product": frozenset(Kernel.gf(f, op) for f in ("gf2^8", "gf2^16")
                         for op in (FieldOp.MATMUL, FieldOp.PRODUCT)),
    "scalar": frozenset({Kernel.COPY, *(Kernel.gf(f, op) for f in ("gf2^8", "gf2^16")
                                        for op in (FieldOp.THIN, FieldOp.THIN_OPERAND))}),
    "python": frozenset({Kernel.CALL, Kernel.PLACE,
                         *(Kernel.gf(f, op) for f in ("gf2^8", "gf2^16")
                           for op in (FieldOp.INVERSE, FieldOp.INVERSE_STEP))}),
}
"""The kinds of kernel whose multipliers :func:`fit` fits on the encode and reduce (every
kernel but the map's belongs to one)."""
KIND_NAMES: tuple[str, ...] = tuple(KINDS)
PHASES = ("encode", "reduce")
"""The phases the fit uses and the BDC-over-unified ratio sums."""
IDENTIFIED_SHARE = 0.2
"""A kind is identified by the training settings if, in at least one of their encode or
reduce phases, it holds this share of the base seconds."""
TOLERANCE = 0.2
"""Model within this relative distance of the measured median: the issue's claim."""
MIN_RUNS = 3
"""Independent runs a comparison needs before :func:`summarize_runs` calls it
``comparable``."""
_KIND_OF: dict[Kernel, str] = {k: name for name, ks in KINDS.items() for k in ks}
_KIND_OF.update({Kernel.gf(f, FieldOp.MAP): "map" for f in ("gf2^8", "gf2^16")})


def work_class(kernel: Kernel) -> str:
    """The kind of ``kernel`` (:data:`KINDS`), ``map`` for a map chunk."""
    return _KIND_OF[kernel]


def class_seconds(work: Iterable[Work], base: Table = None) -> dict[str, float]:
    """The base seconds of ``work`` per kind (:func:`work_class`)."""
    t = CostTable.of(base)
    out = {k: 0.0 for k in (*KIND_NAMES, "map")}
    for w in work:
        out[work_class(w.kernel)] += price([w], t)
    return out


ServerSeconds = tuple[float, ...]
"""A server's base seconds in one phase, per kind (in :data:`KIND_NAMES` order)."""


@dataclass(frozen=True)
class Features:
    """One setting's work in base seconds (:func:`features`): per server its encode and its
    map; per finishing order, per reducer its reduce."""

    encode: tuple[ServerSeconds, ...]
    reduce: tuple[tuple[ServerSeconds, ...], ...]
    map: tuple[float, ...]

    def shares(self) -> dict[str, dict[str, float]]:
        """Per phase (encode, reduce), each kind's share of the base seconds."""
        out: dict[str, dict[str, float]] = {}
        for ph, servers in (("encode", self.encode),
                            ("reduce", [s for order in self.reduce for s in order])):
            sums = [sum(s[i] for s in servers) for i in range(len(KIND_NAMES))]
            tot = sum(sums)
            out[ph] = {k: (v / tot if tot > 0 else 0.0) for k, v in zip(KIND_NAMES, sums)}
        return out


def features_of(jw: JobWork, base: Table = None) -> Features:
    """:class:`Features` of a listed job's work priced with ``base``."""
    t = CostTable.of(base)

    def kinds(work: Iterable[Work]) -> ServerSeconds:
        cs = class_seconds(work, t)
        return tuple(cs[k] for k in KIND_NAMES)

    return Features(encode=tuple(kinds(cw.work) for cw in jw.encode),
                    reduce=tuple(tuple(kinds(cw.work) for cw in order) for order in jw.reduce),
                    map=tuple(class_seconds(w, t)["map"] for w in jw.map))


def features(params: Any, base: Table = None, orders: int = 3) -> Features:
    """The work of the job ``params`` (:func:`~mpi_coded.analysis.calibration.predict.
    job_work`: its own code, placement and shuffle plans, ``orders`` finishing orders) in
    base seconds; ValueError for a code that does not list its work (lt)."""
    jw = job_work(params, orders=orders)
    if jw is None:
        raise ValueError(f"{params.scheme}: its code does not list its work (no fitted model)")
    return features_of(jw, base)


@dataclass(frozen=True)
class FittedModel:
    """The multipliers per kind (missing: 1) and the overhead (module docstring), the cores
    the servers share (None: a core each), and what the fit says about itself."""

    theta: Mapping[str, float] = field(default_factory=dict)
    map: float = 1.0
    overhead_s: float = 0.0
    cores: int | None = None
    fixed: tuple[str, ...] = ()
    """Kinds not identified by the training settings (multiplier left at 1)."""
    training: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    """Per training setting and phase, predicted over measured."""

    def multipliers(self) -> tuple[float, ...]:
        return tuple(float(self.theta.get(k, 1.0)) for k in KIND_NAMES)

    def _wall(self, servers: Sequence[ServerSeconds]) -> float:
        th = self.multipliers()
        return shared_wall([sum(a * b for a, b in zip(th, s)) for s in servers], self.cores)

    def phase(self, f: Features, phase: str) -> float:
        """The predicted wall seconds of ``phase`` (encode, reduce or map) of ``f``."""
        if phase == "encode":
            return self._wall(f.encode) + self.overhead_s
        if phase == "reduce":
            walls = [self._wall(order) for order in f.reduce]
            return sum(walls) / len(walls) + self.overhead_s
        if phase == "map":
            return shared_wall([self.map * s for s in f.map], self.cores)
        raise KeyError(phase)

    def predict(self, f: Features) -> dict[str, float]:
        """Encode, reduce, map and ``encode_reduce`` wall seconds of ``f``."""
        out = {ph: self.phase(f, ph) for ph in ("encode", "reduce", "map")}
        out["encode_reduce"] = out["encode"] + out["reduce"]
        return out

    def ratio(self, f: Features, ref: Features) -> float:
        """Encode + reduce of ``f`` over those of ``ref`` (BDC over unified)."""
        return self.predict(f)["encode_reduce"] / self.predict(ref)["encode_reduce"]

    def to_dict(self) -> dict[str, Any]:
        return {"theta": {k: float(self.theta.get(k, 1.0)) for k in KIND_NAMES},
                "map": self.map, "overhead_s": self.overhead_s, "cores": self.cores,
                "fixed": list(self.fixed),
                "training": {k: dict(v) for k, v in self.training.items()}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FittedModel:
        return cls(theta={k: float(v) for k, v in d.get("theta", {}).items()},
                   map=float(d.get("map", 1.0)), overhead_s=float(d.get("overhead_s", 0.0)),
                   cores=None if d.get("cores") is None else int(d["cores"]),
                   fixed=tuple(d.get("fixed", ())),
                   training={k: dict(v) for k, v in d.get("training", {}).items()})


def median_model(models: Sequence[FittedModel]) -> FittedModel:
    """One model from the fits of independent runs: per kind the median multiplier, the
    median map multiplier and overhead; ``cores`` and ``fixed`` of the first (the runs of
    one machine and one procedure); no ``training``.  Used to carry a fit to a held-out
    size (``scripts/bench_paper.py --fit``)."""
    if not models:
        raise ValueError("median_model of no models")
    return FittedModel(
        theta={k: float(np.median([m.theta.get(k, 1.0) for m in models])) for k in KIND_NAMES},
        map=float(np.median([m.map for m in models])),
        overhead_s=float(np.median([m.overhead_s for m in models])),
        cores=models[0].cores, fixed=models[0].fixed)


@dataclass(frozen=True)
class Observation:
    """A training setting: its features and its measured phases (medians of its
    repetitions, seconds; ``map`` optional)."""

    name: str
    features: Features
    measured: Mapping[str, float]


def phase_overhead(records: Iterable[Mapping[str, Any]]) -> float:
    """The seconds a phase lasts beyond its slowest server's own seconds: over the
    records' encode and reduce, the median of ``encode_s - max(server_encode_s)`` and
    ``reduce_s - max(server_decode_s)``, at least 0 (0 without such records)."""
    gaps: list[float] = []
    for r in records:
        for ph, server in (("encode_s", "server_encode_s"), ("reduce_s", "server_decode_s")):
            own = r.get(server)
            if isinstance(own, Mapping) and own and ph in r:
                gaps.append(float(r[ph]) - max(float(v) for v in own.values()))
    return max(0.0, float(np.median(gaps))) if gaps else 0.0


def _residuals(model: FittedModel, obs: Sequence[Observation]) -> list[float]:
    out = []
    for o in obs:
        for ph in PHASES:
            pred, meas = model.phase(o.features, ph), float(o.measured[ph])
            out.append(math.log(max(pred, 1e-12) / meas))
    return out


LOG_BOUND = math.log(100.0)
"""The fitted multipliers stay within ``[1/100, 100]``."""


def fit(observations: Sequence[Observation], cores: int | None,
        overhead_s: float = 0.0) -> FittedModel:
    """The multipliers that make the model's encode and reduce meet the observations'
    (least squares on log predicted over measured, from a few common starting values,
    bounded to ``[1/100, 100]``), ``map`` the median of measured over predicted map where
    measured; a kind no observation identifies (:data:`IDENTIFIED_SHARE`) keeps 1
    (``fixed``)."""
    from scipy.optimize import least_squares  # deferred: scipy, only when a fit runs

    obs = list(observations)
    if not obs:
        raise ValueError("fit needs at least one observation")
    for o in obs:
        for ph in PHASES:
            v = o.measured.get(ph)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"{o.name}: measured {ph} must be a positive number, got {v!r}")
    c = None if cores is None else max(1, int(cores))
    shares = [o.features.shares()[ph] for o in obs for ph in PHASES]
    free = [k for k in KIND_NAMES if any(sh[k] >= IDENTIFIED_SHARE for sh in shares)]
    fixed = tuple(k for k in KIND_NAMES if k not in free)

    def model_at(u: Sequence[float]) -> FittedModel:
        return FittedModel(theta={k: math.exp(float(x)) for k, x in zip(free, u)},
                           overhead_s=overhead_s, cores=c)

    def res(u: Sequence[float]) -> list[float]:
        return _residuals(model_at(u), obs)

    best: list[float] = []
    if free:
        starts = [[math.log(g)] * len(free) for g in (0.3, 1.0, 3.0)]
        fits = [least_squares(res, s0, bounds=(-LOG_BOUND, LOG_BOUND)) for s0 in starts]
        best = [float(x) for x in min(fits, key=lambda r: float(r.cost)).x]
    m = model_at(best)
    maps = [float(o.measured["map"]) / m.phase(o.features, "map") for o in obs
            if isinstance(o.measured.get("map"), (int, float)) and float(o.measured["map"]) > 0
            and m.phase(o.features, "map") > 0]
    training = {o.name: {ph: m.phase(o.features, ph) / float(o.measured[ph]) for ph in PHASES}
                for o in obs}
    return FittedModel(theta=dict(m.theta), map=float(np.median(maps)) if maps else 1.0,
                       overhead_s=overhead_s, cores=c, fixed=fixed, training=training)


def spread(values: Iterable[float]) -> dict[str, float]:
    """Median, quartiles (linear interpolation), interquartile range, the IQR over the
    median (``rel_iqr``), min, max and count of ``values``."""
    v = np.asarray([float(x) for x in values], dtype=float)
    if v.size == 0:
        raise ValueError("spread of no values")
    q1, med, q3 = (float(x) for x in np.percentile(v, [25, 50, 75]))
    return {"median": med, "q1": q1, "q3": q3, "iqr": q3 - q1,
            "rel_iqr": (q3 - q1) / med if med else math.inf,
            "min": float(v.min()), "max": float(v.max()), "n": int(v.size)}


def load_normalized(records: Sequence[Mapping[str, Any]], phase: str,
                    reference_map_s: float) -> list[float]:
    """Each repetition's ``phase`` seconds (``"encode_reduce"``: their sum) scaled by
    ``reference_map_s`` over its own map seconds: the map does the same work in every
    setting of a comparison (unified and BDC store as many rows per server), so its
    seconds measure how much of the cores the job got in that repetition (other work on a
    shared machine slows the phases of one repetition alike)."""
    out = []
    for r in records:
        v = (float(r["encode_s"]) + float(r["reduce_s"]) if phase == "encode_reduce"
             else float(r[f"{phase}_s"]))
        out.append(v * reference_map_s / float(r["map_s"]))
    return out


def summarize_runs(runs: Sequence[Mapping[str, Any]], tolerance: float = TOLERANCE,
                   measured_key: str = "ratio_measured", reps_key: str = "reps"
                   ) -> dict[str, Any]:
    """Across independent runs, per held-out ``T``: the measured BDC-over-unified ratio's
    median and spread over the runs (each run's ratio: median encode + reduce of its
    repetitions), the repetitions' spread (pooled over runs, relative IQR of encode +
    reduce of the BDC and of the unified jobs), the model's ratio (median over the runs'
    fits) and model over measured.

    Each run is a mapping with ``ratio_measured`` and ``ratio_model`` (objects keyed by
    ``T``) and ``reps`` (``T`` -> list of encode + reduce seconds per repetition, ``"1"``
    the unified job's); ``ratio_table_model`` too if present.  ``measured_key`` and
    ``reps_key`` name other measured ratios and repetitions (the load-normalized ones,
    :func:`load_normalized`).

    ``comparable``: at least :data:`MIN_RUNS` runs, and their spread (relative IQR) below
    ``tolerance``, the distance claimed, so the comparison means something; ``within``:
    the model's ratio within ``tolerance`` of the measured median; ``held``: both.
    ``distinguishable``: the measured median differs from 1 (BDC against unified) by more
    than the runs' IQR."""
    if not runs:
        raise ValueError("no runs to summarize")
    Ts = sorted({T for r in runs for T in r[measured_key]}, key=lambda x: int(x))
    per: dict[str, Any] = {}
    for T in Ts:
        have = [r for r in runs if T in r[measured_key] and T in r["ratio_model"]]
        meas = spread(float(r[measured_key][T]) for r in have)
        model = spread(float(r["ratio_model"][T]) for r in have)
        row: dict[str, Any] = {
            "runs": len(have), "measured": meas, "model": model,
            "measured_per_run": [float(r[measured_key][T]) for r in have],
            "model_per_run": [float(r["ratio_model"][T]) for r in have],
            "model_over_measured": model["median"] / meas["median"]}
        reps_b = [float(x) for r in have for x in r.get(reps_key, {}).get(T, [])]
        reps_u = [float(x) for r in have for x in r.get(reps_key, {}).get("1", [])]
        if reps_b and reps_u:
            row["reps_bdc"] = spread(reps_b)
            row["reps_unified"] = spread(reps_u)
            row["pooled_ratio"] = row["reps_bdc"]["median"] / row["reps_unified"]["median"]
        tab = [float(r["ratio_table_model"][T]) for r in have
               if T in r.get("ratio_table_model", {})]
        if tab:
            row["table_model"] = spread(tab)
            row["table_model_over_measured"] = row["table_model"]["median"] / meas["median"]
        row["comparable"] = bool(len(have) >= MIN_RUNS and meas["rel_iqr"] < tolerance)
        row["within"] = bool(abs(row["model_over_measured"] - 1.0) <= tolerance)
        row["held"] = row["comparable"] and row["within"]
        row["distinguishable"] = bool(abs(meas["median"] - 1.0) > meas["iqr"])
        per[T] = row
    return {"per_T": per, "runs": len(runs), "tolerance": tolerance,
            "measured_key": measured_key,
            "all_held": all(v["held"] for v in per.values())}
