"""The network benchmark (``scripts/bench_network.py``): the coded job and the elastic job
on emulated clusters with shaped links (:mod:`mpi_coded.cluster.bench`), measured beside
the network model (docs/theory.md, "(B.7) The network model", "(B.8) The shuffle fitted on
the job itself") through :mod:`mpi_coded.analysis.compare`.

:class:`NetworkBench` runs it (or, with ``replay``, reads a previous run's lines):

1. the link calibration at each rate (:func:`mpi_coded.cluster.bench.calibrate`), written
   into the calibration file's ``network`` object (:func:`link_section`,
   :func:`write_link_calibration`);
2. the coded cases of every scheme and multicast mode: the measured shuffle over the
   model's for the plan of every repetition's real finishing order, fitted at each rate
   on the :attr:`BenchSizes.training` cases (B.8), every other case held out
   (:func:`~mpi_coded.analysis.compare.summarise_coded`); a scheme without multicasts (a
   batch stored once: ``replication == 1``) runs ``p2p`` only, its ``bcast`` case is that
   run (``same_as``);
3. a total-latency trade-off over ``q`` under the shifted-exponential map throttle
   (:func:`~mpi_coded.analysis.compare.tradeoff_point`);
4. the elastic job, coded and uncoded, on the traces given
   (:func:`~mpi_coded.analysis.compare.elastic_model`);
5. link heterogeneity: one host at a fraction of the others' rate.

:func:`assemble` joins everything into the bench's JSON object (:class:`BenchReport`):
the flattened ratios and the targets (the shuffle's on the held-out cases).  Scheme names
appear only as data (:class:`BenchSizes`): the schemes' behaviour comes from their objects.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mpi_coded.analysis import network as nm
from mpi_coded.analysis.compare import (
    ElasticCase,
    ElasticComparison,
    ShuffleSummary,
    TradeoffPoint,
    best,
    elastic_measured,
    elastic_model,
    ratio,
    summarise_coded,
    tradeoff_point,
    training_case,
)
from mpi_coded.analysis.shuffle_fit import ShuffleFit, fit_shuffle, rate_fit
from mpi_coded.cluster.bench import (
    TCP,
    BenchCluster,
    bench_cluster,
    calibrate,
    cluster_name,
    run_coded,
    run_elastic,
)
from mpi_coded.coded.schemes import coded_params as scheme_params
from mpi_coded.coded.schemes import get as scheme_of
from mpi_coded.errors import ConfigError
from mpi_coded.rates import format_rate, parse_rate

BANDS = {"100mbit": (0.85, 1.15), "1gbit": (0.7, 1.3)}
"""The held-out shuffle's measured over model target at each rate (another: any)."""
COMPARED_RATES = ("100mbit", "1gbit")
"""``shuffle_<a>_over_<b>``: each p2p case's shuffle at the first rate over the second."""
GAIN_RATES = ("100mbit",)
"""Rates where the elastic job's coded run must beat the uncoded one."""
ELASTIC_POLICIES = {"coded": "heterogeneous", "uncoded": "uncoded"}
"""The elastic policy of each side of :class:`~mpi_coded.analysis.compare.ElasticComparison`."""


@dataclass(frozen=True)
class BenchSizes:
    """What the bench runs."""

    quick: bool = False
    K: int = 9
    q: int = 6
    mu: str = "1/3"
    m: int = 720
    n: int = 20
    N: int = 5400
    field: str = "float64"
    bdc_T: int = 10
    """``T`` of every partitioned scheme."""
    reps: int = 3
    rates: tuple[str, ...] = ("100mbit", "1gbit")
    schemes: tuple[str, ...] = ("uc", "cmr", "unified", "bdc", "lt")
    modes: tuple[str, ...] = ("p2p", "bcast")
    training: tuple[tuple[str, str], ...] = (("p2p", "uc"), ("p2p", "unified"),
                                             ("p2p", "cmr"))
    """The shuffle fit's training cases ``(mode, scheme)`` at each rate (B.8)."""
    pairs: tuple[tuple[str, str], ...] = (("cmr", "uc"),)
    """``<a>_over_<b>_shuffle``: measured and modelled shuffle ratios of two schemes."""
    tradeoff_scheme: str = "unified"
    slow_factor: int = 10
    hetero_reps: int = 1
    hetero: bool = True
    hetero_schemes: tuple[str, ...] = ("uc", "cmr", "unified", "lt")
    hetero_traces: tuple[str, ...] = ("seed",)
    to_m: int = 504
    to_N: int = 2700
    to_t_row: float = 0.003
    to_reps: int = 3
    to_qs: tuple[int, ...] | None = None  # None: every feasible q; (): no trade-off
    cal_sizes: tuple[int, ...] = (1 << 20, 4 << 20, 8 << 20)
    cal_reps: int = 3
    el_cols: int = 1000
    el_traces: tuple[str, ...] = ("seed", "random20")
    el_rates: tuple[str, ...] = ("100mbit", "1gbit")

    def to_dict(self) -> dict[str, Any]:
        """The ``sizes`` object of the bench's JSON output."""
        return {"K": self.K, "q": self.q, "mu": self.mu, "m": self.m, "n": self.n,
                "N": self.N, "field": self.field, "bdc_T": self.bdc_T, "reps": self.reps,
                "el_cols": self.el_cols}


# --- sizes the runtime runs --------------------------------------------------------------

def coded_params(scheme: str, K: int, q: int, mu: str, m: int, n: int, N: int, T: int,
                 field_name: str) -> Any:
    """The runnable job of ``scheme`` at (about) ``m`` rows (``Scheme.rows_per_batch_for``)."""
    eta = scheme_of(scheme).rows_per_batch_for(K, q, mu, m)
    return scheme_params(scheme, K, q, mu, eta, n, N, T, field_name)


def feasible_qs(K: int, mu: str, m: int, n: int, N: int, field_name: str,
                scheme: str = "unified") -> list[int]:
    """Every ``q`` the runtime can run ``scheme`` at for ``K``, ``mu`` and some number of
    rows in ``[m, 4 m]``."""
    out = []
    for q in range(1, K + 1):
        for cand in range(m, 4 * m + 1):
            try:
                if coded_params(scheme, K, q, mu, cand, n, N, 1, field_name).m == cand:
                    out.append(q)
                    break
            except (ConfigError, ValueError) as exc:  # a rule of the scheme: not at this m
                if cand == m and "mu * q" in str(exc):
                    break
    return out


def tradeoff_m(K: int, mu: str, m: int, n: int, N: int, field_name: str,
               qs: Sequence[int], scheme: str = "unified") -> int:
    """The smallest ``m' >= m`` at which every ``q`` of ``qs`` runs with ``m'`` rows."""
    for cand in range(m, 4 * m + 1):
        try:
            if all(coded_params(scheme, K, q, mu, cand, n, N, 1, field_name).m == cand
                   for q in qs):
                return cand
        except (ConfigError, ValueError):  # not runnable at this m: the next
            continue
    raise ValueError(f"no m in [{m}, {4 * m}] runs every q of {list(qs)}")


def network_for(ranks: int, rate: str, rate_of: Sequence[str], alpha: float, eff: float,
                elastic: bool = False, fabric: float | None = None) -> nm.Network:
    """The calibrated network of a job of ``ranks`` ranks, one host each."""
    return nm.make_network(ranks, rate, rate_of, alpha, eff,
                           rank_name=nm.elastic_rank_name if elastic else nm.coded_rank_name,
                           fabric=fabric)


# --- the calibration file ----------------------------------------------------------------

def write_link_calibration(path: Path, section: Mapping[str, Any]) -> dict[str, Any]:
    """Set the calibration file's ``network`` object to ``section`` (keeping everything
    else; a new file holds only it), checked as ``model --calibration`` reads it."""
    doc: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    doc["network"] = dict(section)
    alpha, eff = nm.link_calibration(doc)
    if alpha is None or eff is None or nm.link_fabric(doc) is None:
        raise ValueError(f"not a network calibration: {section}")
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return dict(doc["network"])


def link_section(by_rate: Mapping[str, Mapping[str, Any]],
                 fits: Mapping[str, ShuffleFit] | None = None) -> dict[str, Any]:
    """The calibration file's ``network`` object: the first rate's ``alpha_s`` and
    ``efficiency`` (what ``model --calibration`` reads), every rate's link fit and its
    shuffle fit (``shuffle_fit``, docs/theory.md (B.8))."""
    fits = fits or {}
    first = next(iter(by_rate.values()))
    return {"alpha_s": first["alpha_s"], "efficiency": first["efficiency"],
            "fabric_bps": first["fabric_bps"], "rate": first["rate"],
            "measured_on": f"mpi-coded cluster (veth + tbf, deep queues, TCP {TCP}), "
                           "MPICH over TCP, scripts/bench_network.py",
            "by_rate": {r: {**{k: v[k] for k in ("alpha_s", "efficiency", "fabric_bps",
                                                 "exchange_efficiency")},
                            **({"shuffle_fit": fits[r].to_dict()} if r in fits else {})}
                        for r, v in by_rate.items()}}


# --- the report --------------------------------------------------------------------------

Coded = Mapping[str, Mapping[str, Mapping[str, ShuffleSummary]]]
"""``{rate: {mode: {scheme: case}}}``."""
Elastic = Mapping[str, Mapping[str, ElasticComparison]]
"""``{rate: {trace: comparison}}``."""


@dataclass(frozen=True)
class Tradeoff:
    """The total-latency trade-off over ``q`` (measured and modelled best ``q``)."""

    K: int
    mu: str
    m: int
    N: int
    n: int
    t_row: float
    rate: str
    qs: list[int]
    points: list[TradeoffPoint]

    def to_dict(self) -> dict[str, Any]:
        return {"K": self.K, "mu": self.mu, "m": self.m, "N": self.N, "n": self.n,
                "t_row": self.t_row, "rate": self.rate, "qs": list(self.qs),
                "points": [p.to_dict() for p in self.points],
                "best_q_measured": best(self.points),
                "best_q_model": best(self.points, model=True)}


@dataclass(frozen=True)
class Heterogeneity:
    """One host's link at a fraction of the others' rate."""

    rate: str
    slow_host_rate: str
    slow_rank: int
    coded: Mapping[str, ShuffleSummary]
    elastic: Mapping[str, ElasticComparison]

    def to_dict(self) -> dict[str, Any]:
        return {"rate": self.rate, "slow_host_rate": self.slow_host_rate,
                "slow_rank": self.slow_rank,
                "coded": {s: v.to_dict() for s, v in self.coded.items()},
                "elastic": {t: v.to_dict() for t, v in self.elastic.items()}}


@dataclass(frozen=True)
class BenchReport:
    """The bench's JSON object (:func:`assemble`; :meth:`to_dict`)."""

    quick: bool
    sizes: Mapping[str, Any]
    calibration: Mapping[str, Any]
    fits: Mapping[str, ShuffleFit]
    coded: Coded
    tradeoff: Tradeoff | None
    elastic: Elastic
    hetero: Heterogeneity | None
    trained: list[str]
    ratios: Mapping[str, Mapping[str, float | None]]
    """``shuffle_measured_over_model``, ``transfer_...``, ``..._prior_model``,
    ``..._link_model``: ``{rate/mode/scheme: ratio}``."""
    pair_ratios: Mapping[str, Mapping[str, Mapping[str, Any]]]
    """``{<a>_over_<b>_shuffle: {rate/mode: ratios}}``."""
    rate_ratio: tuple[str, Mapping[str, float | None]]
    verified: bool
    targets: Mapping[str, bool]

    def to_dict(self) -> dict[str, Any]:
        coded = {r: {m: {s: v.to_dict() for s, v in by_s.items()} for m, by_s in by_m.items()}
                 for r, by_m in self.coded.items()}
        return {"bench": "network", "quick": self.quick, "sizes": dict(self.sizes),
                "calibration": dict(self.calibration),
                "shuffle_fit": {r: f.to_dict() for r, f in self.fits.items()},
                "shuffle_training_cases": list(self.trained),
                **{k: dict(v) for k, v in self.ratios.items()},
                **{k: {kk: dict(vv) for kk, vv in v.items()}
                   for k, v in self.pair_ratios.items()},
                self.rate_ratio[0]: dict(self.rate_ratio[1]), "coded": coded,
                "tradeoff": self.tradeoff.to_dict() if self.tradeoff else {},
                "elastic": {r: {t: v.to_dict() for t, v in by_t.items()}
                            for r, by_t in self.elastic.items()},
                "heterogeneity": self.hetero.to_dict() if self.hetero else {},
                "all_verified": self.verified, "targets": dict(self.targets),
                "targets_met": sum(bool(v) for v in self.targets.values()),
                "targets_total": len(self.targets)}


RATIO_KEYS = ("shuffle_measured_over_model", "transfer_measured_over_model",
              "shuffle_measured_over_prior_model", "shuffle_measured_over_link_model")
"""The flattened ratios (:class:`ShuffleSummary` fields), ``{rate/mode/scheme: ratio}``
each; the prior model's only where a prior fit was given."""


def _pair(a: ShuffleSummary, b: ShuffleSummary) -> dict[str, float | None]:
    meas = ratio(a.shuffle_s, b.shuffle_s)
    mod = ratio(a.shuffle_model_s, b.shuffle_model_s)
    return {"measured": meas, "model": mod, "measured_over_model": ratio(meas, mod),
            "load_ratio": ratio(a.load, b.load),
            "bytes_ratio": ratio(a.model_bytes, b.model_bytes)}


def _verified(coded: Coded, tradeoff: Tradeoff | None, elastic: Elastic,
              hetero: Heterogeneity | None) -> bool:
    ok = all(v.verified for by_m in coded.values() for by_s in by_m.values()
             for v in by_s.values())
    ok = ok and all(p.verified for p in (tradeoff.points if tradeoff else []))
    ok = ok and all(row.verified for by_t in elastic.values() for row in by_t.values())
    if hetero is not None:
        ok = ok and all(v.verified for v in hetero.coded.values())
        ok = ok and all(row.verified for row in hetero.elastic.values())
    return ok


def assemble(sz: BenchSizes, cal: Mapping[str, Any], coded: Coded,
             tradeoff: Tradeoff | None, elastic: Elastic, hetero: Heterogeneity | None,
             fits: Mapping[str, ShuffleFit] | None = None) -> BenchReport:
    """The bench's report: every figure, the flattened ratios and the targets (the
    shuffle's on the held-out cases, within :data:`BANDS`; every pair's measured ratio
    within 10% of the model's; the trade-off's best ``q``; the elastic job's gain and its
    ratio within 20% of the model's).  The training cases are listed, not targeted."""
    ratios: dict[str, dict[str, float | None]] = {k: {} for k in RATIO_KEYS}
    trained: list[str] = []
    pairs: dict[str, dict[str, Any]] = {f"{a}_over_{b}_shuffle": {} for a, b in sz.pairs}
    for rate, by_mode in coded.items():
        for mode, by_scheme in by_mode.items():
            for scheme, v in by_scheme.items():
                key = f"{rate}/{mode}/{scheme}"
                for attr in RATIO_KEYS:
                    if "prior" not in attr or v.shuffle_prior_model_s is not None:
                        ratios[attr][key] = getattr(v, attr)
                if v.training and v.same_as is None:
                    trained.append(key)
            for a, b in sz.pairs:
                if a in by_scheme and b in by_scheme:
                    pairs[f"{a}_over_{b}_shuffle"][f"{rate}/{mode}"] = _pair(by_scheme[a],
                                                                              by_scheme[b])
    targets: dict[str, bool] = {}
    for key, val in ratios["shuffle_measured_over_model"].items():
        rate, mode, scheme = key.split("/")
        same = coded[rate][mode][scheme].same_as
        if key in trained or (same is not None and f"{rate}/{same}/{scheme}" in trained):
            continue  # fitted on it: ~1 by construction
        lo, hi = BANDS.get(rate, (0.0, float("inf")))
        targets[f"shuffle {key} in [{lo}, {hi}]"] = val is not None and lo <= val <= hi
    for name, by_key in pairs.items():
        for key, pair in by_key.items():
            mom = pair["measured_over_model"]
            targets[f"{name.removesuffix('_shuffle')} {key} within 10%"] = (
                mom is not None and abs(mom - 1) <= 0.10)
    if tradeoff is not None:
        targets["tradeoff best q measured == model"] = (best(tradeoff.points) ==
                                                        best(tradeoff.points, model=True))
    for rate, traces in elastic.items():
        for trace, row in traces.items():
            uoc = row.uncoded_over_coded
            if rate in GAIN_RATES:
                targets[f"elastic {trace} {rate} uncoded_over_coded > 1"] = (
                    uoc["measured"] is not None and uoc["measured"] > 1)
            mom = uoc["measured_over_model"]
            targets[f"elastic {trace} {rate} within 20% of model"] = (
                mom is not None and abs(mom - 1) <= 0.20)
    hi_rate, lo_rate = COMPARED_RATES
    check: dict[str, float | None] = {}
    if hi_rate in coded and lo_rate in coded:
        for scheme, v in coded[hi_rate].get("p2p", {}).items():
            other = coded[lo_rate].get("p2p", {}).get(scheme)
            check[scheme] = ratio(v.shuffle_s, other.shuffle_s if other else None)
    return BenchReport(sz.quick, sz.to_dict(), cal, dict(fits or {}), coded, tradeoff,
                       elastic, hetero, trained, ratios, pairs,
                       (f"shuffle_{hi_rate}_over_{lo_rate}", check),
                       _verified(coded, tradeoff, elastic, hetero), targets)


# --- running it --------------------------------------------------------------------------

def _stderr(msg: str) -> None:
    print(f"[bench_network {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass
class NetworkBench:
    """One run of the bench (module docstring); ``traces``: the elastic configs (TOML with
    ``{cols}`` and ``{policy}`` fields) by name; ``prior``: the calibration file's
    ``network`` object before the run."""

    sz: BenchSizes
    traces: Mapping[str, str]
    out: Path
    base: Path
    replay: bool = False
    prior: Mapping[str, Any] | None = None
    progress: Callable[[str], None] = _stderr
    cal: dict[str, dict[str, Any]] = field(default_factory=dict)
    fits: dict[str, ShuffleFit] = field(default_factory=dict)

    def prior_fit(self, rate: str) -> ShuffleFit | None:
        """The shuffle fit a previous run wrote for ``rate``, if any."""
        return rate_fit(self.prior, parse_rate(rate, "--rate"))

    def net(self, ranks: int, rate: str, rate_of: Sequence[str] = (),
            elastic: bool = False) -> nm.Network:
        cal = self.cal[rate]
        return network_for(ranks, rate, rate_of, cal["alpha_s"], cal["efficiency"], elastic,
                           cal.get("fabric_bps"))

    def cluster(self, tag: str, rate: str, rate_of: Sequence[str] = ()
                ) -> AbstractContextManager[BenchCluster]:
        """The cluster of one link setting (``replay``: none), named ``t19c<tag><pid>``."""
        return bench_cluster(cluster_name(tag), self.sz.K + 1, rate, rate_of,
                             base=self.base, replay=self.replay, progress=self.progress)

    def coded_cases(self, c: BenchCluster, rate: str, rate_of: Sequence[str],
                    modes: Sequence[str], reps: int, tag: str,
                    schemes: Sequence[str] | None = None
                    ) -> dict[str, dict[str, ShuffleSummary]]:
        """Every scheme in every mode at ``rate`` (a scheme without multicasts: its p2p
        run for every mode); the first cases at a rate train its shuffle fit."""
        sz = self.sz
        net = self.net(sz.K + 1, rate, rate_of)
        raw = network_for(sz.K + 1, rate, rate_of, 0.0, 1.0)
        lines: dict[tuple[str, str], list[Any]] = {}
        run_mode: dict[tuple[str, str], str] = {}
        for scheme in schemes or sz.schemes:
            p = self._params(scheme)
            for mode in modes:
                rm = mode if p.replication > 1 else "p2p"
                run_mode[(mode, scheme)] = rm
                if (rm, scheme) not in lines:
                    lines[(rm, scheme)] = run_coded(
                        c, p, rm, reps, self.out / f"{tag}-{scheme}-{rm}.jsonl")
        if rate not in self.fits:
            cases = [training_case(f"{s}/{m}", lines[(m, s)], m, net)
                     for m, s in sz.training if (m, s) in lines]
            if cases:
                self.fits[rate] = fit_shuffle(cases)
                self.progress(f"shuffle fit at {rate}: {self.fits[rate].to_dict()}")
        fit, prior = self.fits.get(rate), self.prior_fit(rate)
        done = {key: summarise_coded(runs, key[0], net, raw, fit, prior,
                                     key in sz.training and not rate_of)
                for key, runs in lines.items()}
        got: dict[str, dict[str, ShuffleSummary]] = {m: {} for m in modes}
        for scheme in schemes or sz.schemes:
            for mode in modes:
                rm = run_mode[(mode, scheme)]
                v = done[(rm, scheme)]
                got[mode][scheme] = v if rm == mode else _same_as(v, rm)
        return got

    def _params(self, scheme: str) -> Any:
        sz = self.sz
        T = sz.bdc_T if scheme_of(scheme).partitioned else 1
        return coded_params(scheme, sz.K, sz.q, sz.mu, sz.m, sz.n, sz.N, T, sz.field)

    def tradeoff(self, c: BenchCluster) -> Tradeoff:
        sz = self.sz
        qs = (list(sz.to_qs) if sz.to_qs is not None else
              feasible_qs(sz.K, sz.mu, sz.to_m, sz.n, sz.to_N, sz.field, sz.tradeoff_scheme))
        m = tradeoff_m(sz.K, sz.mu, sz.to_m, sz.n, sz.to_N, sz.field, qs, sz.tradeoff_scheme)
        net = self.net(sz.K + 1, sz.rates[0])
        fit = self.fits.get(sz.rates[0])
        points = []
        for q in qs:
            p = coded_params(sz.tradeoff_scheme, sz.K, q, sz.mu, m, sz.n, sz.to_N, 1, sz.field)
            runs = run_coded(c, p, "p2p", sz.to_reps, self.out / f"tradeoff-q{q}.jsonl",
                             ["--straggler", "shiftexp", "--t-row", str(sz.to_t_row),
                              "--seed", "0"])
            points.append(tradeoff_point(runs, net, sz.to_t_row, 0, fit))
        return Tradeoff(sz.K, sz.mu, m, sz.to_N, sz.n, sz.to_t_row, sz.rates[0], qs, points)

    def elastic(self, c: BenchCluster, rate: str, rate_of: Sequence[str], tag: str,
                traces: Sequence[str] | None = None) -> dict[str, ElasticComparison]:
        out: dict[str, ElasticComparison] = {}
        for trace in traces or self.sz.el_traces:
            side: dict[str, ElasticCase] = {}
            for key, policy in ELASTIC_POLICIES.items():
                toml = self.traces[trace].format(cols=self.sz.el_cols, policy=policy)
                cfg, steps = run_elastic(c, toml, self.out / f"{tag}-cec-{trace}-{policy}.jsonl")
                net = self.net(int(cfg.N) + 1, rate, rate_of, elastic=True)
                side[key] = ElasticCase(elastic_measured(steps),
                                        elastic_model(steps, cfg, policy, net,
                                                      ELASTIC_POLICIES["uncoded"]))
            out[trace] = ElasticComparison(side["coded"], side["uncoded"])
        return out

    def run(self) -> BenchReport:
        sz = self.sz
        coded: dict[str, Any] = {}
        elastic: dict[str, Any] = {}
        tradeoff = None
        for i, rate in enumerate(sz.rates):
            with self.cluster("abcdefg"[i], rate) as c:
                self.progress(f"link calibration at {rate}")
                self.cal[rate] = calibrate(c, sz.cal_sizes, sz.cal_reps, sz.K + 1, self.out)
                self.progress(f"coded job at {rate}")
                coded[rate] = self.coded_cases(c, rate, (), sz.modes, sz.reps, f"coded-{rate}")
                if i == 0 and sz.to_qs != ():
                    self.progress(f"the {sz.tradeoff_scheme} trade-off at {rate}")
                    tradeoff = self.tradeoff(c)
                if rate in sz.el_rates:
                    self.progress(f"elastic job at {rate}")
                    elastic[rate] = self.elastic(c, rate, (), f"{rate}")
        hetero = self.heterogeneity() if sz.hetero else None
        return assemble(sz, self.cal, coded, tradeoff, elastic, hetero, self.fits)

    def heterogeneity(self) -> Heterogeneity:
        """The first server's / machine's host (host 2) at ``1 / slow_factor`` of the rate."""
        sz = self.sz
        rate = sz.rates[0]
        slow = format_rate(parse_rate(rate, "--rate") // sz.slow_factor)
        with self.cluster("h", rate, [f"2={slow}"]) as c:
            self.progress(f"link heterogeneity: host 2 at {slow}, the others at {rate}")
            hc = self.coded_cases(c, rate, ["rank1=" + slow], ("p2p",), sz.hetero_reps,
                                  "hetero", sz.hetero_schemes)
            he = self.elastic(c, rate, ["rank1=" + slow], "hetero", sz.hetero_traces)
        return Heterogeneity(rate, slow, 1, hc["p2p"], he)


def _same_as(v: ShuffleSummary, mode: str) -> ShuffleSummary:
    return replace(v, same_as=mode)
