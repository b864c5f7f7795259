"""Measured results beside the models: result lines joined with the analytic, network and
calibrated models at the lines' own parameters (pure: no MPI, no runtime).

Every function takes the typed views of :mod:`mpi_coded.results` (a plain line is read
into its view first: :func:`as_run`, :func:`as_step`) and works for any registered scheme:
the job's parameters come from its line (:func:`run_params`, the scheme object of the
registry), never from a branch on a scheme's name.

* **The shuffle** (docs/theory.md, "(B.7) The network model" and "(B.8) The shuffle fitted
  on the job itself"): :func:`coded_model` prices the shuffle plan of a run's real
  finishing order on the calibrated network, ``T = max(max_h t_h, 8 B / F)`` with
  ``t_h = n_h alpha + 8 bytes_h / (e rate_h)``, and with a fit
  ``T = o + max(s_host max_h t_h, s_fabric 8 B / F) + beta n_max``;
  :func:`summarise_coded` sets the measured shuffle (median, IQR over the repetitions)
  beside the model's (median over the same repetitions' plans); :func:`training_case` is
  one case of the fit (:func:`mpi_coded.analysis.shuffle_fit.fit_shuffle`).
* **The map** ("(B.6) Delay model", "(B.2) Phases"): :func:`map_model` replays a run's
  straggler draws (every server's target, the same draws as the run) through the map-end
  rule: the phase ends when the finishers so far cover the rows.
* **Total latency**: :func:`tradeoff_point` adds encode and decode as the servers measured
  them, the map of :func:`map_model`, the shuffle and the gather of :func:`coded_model`.
* **The elastic job** ("(A.2) One time step", "(B.7)"): :func:`elastic_model` adds to the
  planner's ``predicted_s`` of every step its messages and, for the uncoded baseline, the
  moves of its rows, priced on the links; under ``fault_tolerance = "ulfm"`` the deaths'
  detection and each join's spawn and block ("(A.9) Deaths and joins",
  :mod:`mpi_coded.analysis.events`).
* **Seconds per phase** ("(C.4) Calibration"): :func:`job_seconds` is the calibrated model
  of a coded job's config line (:func:`mpi_coded.analysis.calibration.predict_seconds`),
  what ``mpi-coded report`` shows beside each job.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

from mpi_coded.analysis import network as nm
from mpi_coded.analysis.calibration.predict import PredictedSeconds, predict_seconds
from mpi_coded.analysis.events import EventPrices, block_seconds, step_death_s
from mpi_coded.analysis.shuffle_fit import ShuffleFit, TrainingCase, terms
from mpi_coded.cec.plan import make_plan
from mpi_coded.cec.uncoded import moves as uncoded_moves
from mpi_coded.cec.uncoded import uncoded_split
from mpi_coded.coded.job import CodedJob
from mpi_coded.coded.mapend import map_phase_done
from mpi_coded.coded.placement import build_placement
from mpi_coded.coded.schemes import coded_params
from mpi_coded.codes.work import Table
from mpi_coded.results import CodedConfig, CodedRun, ElasticConfig, ElasticStep

PHASES = ("encode", "map", "shuffle", "reduce")
"""The phases of a coded run line (``PHASE_KEYS`` of :mod:`mpi_coded.results`, but the
gather) a total latency adds."""


# --- small statistics --------------------------------------------------------------------

def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def iqr(xs: Sequence[float]) -> list[float]:
    """``[Q1, Q3]`` (inclusive quartiles); one value twice for one repetition."""
    if len(xs) < 2:
        return [float(xs[0]), float(xs[0])] if xs else []
    qs = statistics.quantiles(xs, n=4, method="inclusive")
    return [float(qs[0]), float(qs[2])]


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b``; None when either is missing or ``b`` is 0."""
    return a / b if a is not None and b is not None and b != 0 else None


# --- the lines ---------------------------------------------------------------------------

def as_run(line: CodedRun | Mapping[str, Any]) -> CodedRun:
    """The typed view of a coded run line."""
    return line if isinstance(line, CodedRun) else CodedRun.from_record(dict(line))


def as_step(line: ElasticStep | Mapping[str, Any]) -> ElasticStep:
    """The typed view of an elastic step line."""
    return line if isinstance(line, ElasticStep) else ElasticStep.from_record(dict(line))


def run_params(run: CodedRun | CodedConfig | Mapping[str, Any]) -> Any:
    """The job parameters (:class:`~mpi_coded.coded.params.CodedParams`) of a coded run or
    config line, built by its scheme object."""
    r: CodedRun | CodedConfig = (as_run(run) if isinstance(run, Mapping) else run)
    return coded_params(r.scheme, r.K, r.q, Fraction(str(r.mu)), r.rows_per_batch, r.n,
                        r.N, r.T, r.field)


def server_transfer(run: CodedRun | Mapping[str, Any]) -> float:
    """The slowest finisher's own transfer (``server_shuffle_s``: after its plan)."""
    return max((float(v) for v in as_run(run).server_shuffle_s.values()), default=0.0)


def _max_server(values: Mapping[str, float]) -> float:
    return max((float(v) for v in values.values()), default=0.0)


# --- the shuffle -------------------------------------------------------------------------

@dataclass(frozen=True)
class CodedModel:
    """The network model of one coded run (:func:`coded_model`)."""

    shuffle_s: float
    """The fitted shuffle with a fit, else the link-calibrated one."""
    shuffle_link_s: float
    """The link-calibrated shuffle (B.7)."""
    host_s: float
    """``max_h t_h``."""
    fabric_s: float
    """``8 B / F`` (0: no fabric)."""
    copies: int
    """``n_max``: the most payload copies one host sends or receives."""
    gather_s: float
    shuffle_bytes: int
    """The shuffle's bytes on the wire."""
    slowest: str | None
    """The slowest host of the shuffle."""
    load: float
    """The plan's load."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def coded_model(run: CodedRun | Mapping[str, Any], multicast: str, net: nm.Network,
                fit: ShuffleFit | None = None) -> CodedModel:
    """The network model of one coded run line: the plan of its real finishing order
    (``finishing_order``; its ``Q`` must be the run's), priced on ``net`` (B.7);
    ``shuffle_s`` is the fitted shuffle (B.8) when ``fit`` is given."""
    r = as_run(run)
    cn = nm.coded_network(build_placement(run_params(r)), net, multicast, "binomial",
                          r.finishing_order)
    if list(cn.plan.Q) != list(r.Q):
        raise ValueError(f"the plan of the run's finishing order has Q={list(cn.plan.Q)}, "
                         f"the run Q={list(r.Q)}")
    sh, ga = cn.phases["shuffle"], cn.phases["gather"]
    host_s, fabric_s, n_max = terms(sh)
    return CodedModel(shuffle_s=fit.seconds(sh) if fit is not None else sh.seconds,
                      shuffle_link_s=sh.seconds, host_s=host_s, fabric_s=fabric_s,
                      copies=n_max, gather_s=ga.seconds, shuffle_bytes=sh.network_bytes,
                      slowest=sh.slowest, load=float(cn.plan.load))


def training_case(name: str, runs: Sequence[CodedRun | Mapping[str, Any]], multicast: str,
                  net: nm.Network) -> TrainingCase:
    """A case of the shuffle fit (B.8) from its run lines (medians over the repetitions):
    the model's two terms and ``n_max``, the slowest finisher's transfer, and the master's
    shuffle minus it (``o``)."""
    rs = [as_run(r) for r in runs]
    models = [coded_model(r, multicast, net) for r in rs]
    return TrainingCase(name, median([m.host_s for m in models]),
                        median([m.fabric_s for m in models]),
                        median([server_transfer(r) for r in rs]),
                        median([float(r.shuffle_s) - server_transfer(r) for r in rs]),
                        median([float(m.copies) for m in models]))


@dataclass(frozen=True)
class ShuffleSummary:
    """One coded case of the network bench (:func:`summarise_coded`): the measured shuffle
    beside the models' (:meth:`to_dict`: the bench's JSON object of the case)."""

    reps: int
    training: bool
    shuffle_s: float
    shuffle_iqr: list[float]
    shuffle_model_s: float
    shuffle_measured_over_model: float | None
    shuffle_link_model_s: float
    shuffle_measured_over_link_model: float | None
    plan_s: float
    groups_s: float
    transfer_s: float
    transfer_iqr: list[float]
    transfer_measured_over_model: float | None
    reduce_s: float
    gather_model_s: float
    total_s: float
    bytes_on_wire: int
    model_bytes: int
    load: float
    slowest_host_model: str | None
    verified: bool
    shuffle_model_raw_s: float | None = None
    """With the raw network (alpha 0, efficiency 1); None: not asked for."""
    shuffle_prior_model_s: float | None = None
    """With the fit a previous run left (held out across runs); None: no such fit."""
    shuffle_measured_over_prior_model: float | None = None
    same_as: str | None = None
    """The multicast mode whose run this case is (a scheme without multicasts)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            val = getattr(self, f.name)
            if f.name in ("shuffle_model_raw_s", "same_as") and val is None:
                continue  # not asked for
            if f.name.startswith("shuffle_") and "prior" in f.name and \
                    self.shuffle_prior_model_s is None:
                continue  # no prior fit
            out[f.name] = list(val) if isinstance(val, list) else val
        return out


def summarise_coded(runs: Sequence[CodedRun | Mapping[str, Any]], multicast: str,
                    net: nm.Network, raw: nm.Network | None = None,
                    fit: ShuffleFit | None = None, prior: ShuffleFit | None = None,
                    training: bool = False) -> ShuffleSummary:
    """Measured shuffle (median, IQR) beside the model's (median over the same
    repetitions' plans, :func:`coded_model`): fitted with ``fit`` (this run's training
    cases), with ``prior`` (the fit a previous run left in the calibration file: held out
    across runs), and the link-calibrated one; ``raw`` (alpha 0, efficiency 1) for
    reference.  ``transfer_measured_over_model``: the slowest finisher's transfer over the
    larger of B.7's two terms."""
    rs = [as_run(r) for r in runs]
    models = [coded_model(r, multicast, net, fit) for r in rs]
    meas = [float(r.shuffle_s) for r in rs]
    transfer = [server_transfer(r) for r in rs]
    mod = median([m.shuffle_s for m in models])
    link = median([m.shuffle_link_s for m in models])
    wire = median([max(m.host_s, m.fabric_s) for m in models])
    prior_s = over_prior = None
    if prior is not None:
        prior_s = median([coded_model(r, multicast, net, prior).shuffle_s for r in rs])
        over_prior = median(meas) / prior_s if prior_s else None
    return ShuffleSummary(
        reps=len(rs), training=training, shuffle_s=median(meas), shuffle_iqr=iqr(meas),
        shuffle_model_s=mod,
        shuffle_measured_over_model=median(meas) / mod if mod else None,
        shuffle_link_model_s=link,
        shuffle_measured_over_link_model=median(meas) / link if link else None,
        plan_s=median([_max_server(r.server_plan_s) for r in rs]),
        groups_s=median([_max_server(r.server_groups_s) for r in rs]),
        transfer_s=median(transfer), transfer_iqr=iqr(transfer),
        transfer_measured_over_model=median(transfer) / wire if wire else None,
        reduce_s=median([float(r.reduce_s) for r in rs]),
        gather_model_s=median([m.gather_s for m in models]),
        total_s=median([float(r.total_s) for r in rs]),
        bytes_on_wire=int(median([float(r.bytes_on_wire) for r in rs])),
        model_bytes=int(median([m.shuffle_bytes for m in models])),
        load=models[0].load, slowest_host_model=models[0].slowest,
        verified=all(bool(r.verified) for r in rs),
        shuffle_model_raw_s=(None if raw is None else
                             median([coded_model(r, multicast, raw).shuffle_s for r in rs])),
        shuffle_prior_model_s=prior_s, shuffle_measured_over_prior_model=over_prior)


# --- the map and the total latency -------------------------------------------------------

def map_model(run: CodedRun | Mapping[str, Any], t_row: float, straggler: str,
              seed: int) -> float:
    """The map phase the throttle gives for this repetition (docs/theory.md (B.6)): every
    server's target (:meth:`CodedJob.map_target`, the same draws as the run), the servers
    finishing in target order, the phase ending when the map-end rule holds (the scheme's
    cover rule, :func:`~mpi_coded.coded.mapend.map_phase_done`)."""
    r = as_run(run)
    p = run_params(r)
    pl = build_placement(p)
    job = CodedJob(p, straggler=straggler, t_row=t_row, seed=seed)
    targets = sorted((job.map_target(s, len(pl.stored_rows(s)), int(r.rep)), s)
                     for s in range(p.K))
    done: list[int] = []
    for t, s in targets:
        done.append(s)
        if map_phase_done(pl, done):
            return float(t)
    return float(targets[-1][0])


@dataclass(frozen=True)
class PhaseTimes:
    """Seconds of the four phases a total latency adds."""

    encode: float
    map: float
    shuffle: float
    reduce: float

    @property
    def total(self) -> float:
        return self.encode + self.map + self.shuffle + self.reduce

    def to_dict(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in PHASES}


@dataclass(frozen=True)
class TradeoffPoint:
    """One ``q`` of a total-latency trade-off (:func:`tradeoff_point`)."""

    q: int
    m: int
    reps: int
    total_s: float
    total_iqr: list[float]
    model_total_s: float
    phases: PhaseTimes
    """The measured phases (medians)."""
    model_phases: PhaseTimes
    """The model's phases (medians)."""
    load: float
    verified: bool

    def to_dict(self) -> dict[str, Any]:
        return {"q": self.q, "m": self.m, "reps": self.reps, "total_s": self.total_s,
                "total_iqr": list(self.total_iqr), "model_total_s": self.model_total_s,
                "phases": self.phases.to_dict(), "model_phases": self.model_phases.to_dict(),
                "load": self.load, "verified": self.verified}


def _median_phases(ps: Sequence[PhaseTimes]) -> PhaseTimes:
    return PhaseTimes(*(median([getattr(p, k) for p in ps]) for k in PHASES))


def tradeoff_point(runs: Sequence[CodedRun | Mapping[str, Any]], net: nm.Network,
                   t_row: float, seed: int, fit: ShuffleFit | None = None,
                   straggler: str = "shiftexp") -> TradeoffPoint:
    """One ``q`` of the trade-off: measured phases and total (medians) beside the model's:
    the map from the draws (:func:`map_model`), the shuffle and the gather from the network
    model (:func:`coded_model`, ``p2p``), encode and decode compute as the servers measured
    it (which the network model does not price)."""
    rs = [as_run(r) for r in runs]
    measured, models = [], []
    for r in rs:
        cm = coded_model(r, "p2p", net, fit)
        models.append(PhaseTimes(_max_server(r.server_encode_s),
                                 map_model(r, t_row, straggler, seed), cm.shuffle_s,
                                 _max_server(r.server_decode_s) + cm.gather_s))
        measured.append(PhaseTimes(float(r.encode_s), float(r.map_s), float(r.shuffle_s),
                                   float(r.reduce_s)))
    totals = [float(r.encode_s + r.map_s + r.shuffle_s + r.reduce_s) for r in rs]
    return TradeoffPoint(q=rs[0].q, m=rs[0].m, reps=len(rs), total_s=median(totals),
                         total_iqr=iqr(totals),
                         model_total_s=median([m.total for m in models]),
                         phases=_median_phases(measured), model_phases=_median_phases(models),
                         load=float(Fraction(rs[0].load_plan_exact)),
                         verified=all(bool(r.verified) for r in rs))


def best(points: Sequence[TradeoffPoint], model: bool = False) -> int | None:
    """The ``q`` of the lowest measured (``model``: modelled) total; None without points."""
    if not points:
        return None
    return int(min(points, key=lambda p: p.model_total_s if model else p.total_s).q)


# --- the elastic job ---------------------------------------------------------------------

@dataclass(frozen=True)
class ElasticModel:
    """The elastic job's model over its recorded steps (:func:`elastic_model`)."""

    total_s: float
    network_s: float
    move_s: float
    bytes_moved: int
    compute_s: float
    step_s: list[float]
    death_s: float = 0.0
    """The deaths' price over the steps (docs/theory.md (A.9)), in ``total_s``."""
    joins: tuple[JoinPrice, ...] = ()
    """Each join's price beside its measurement (not in ``total_s``: a join happens
    between steps)."""

    def to_dict(self) -> dict[str, Any]:
        return {"total_s": self.total_s, "network_s": self.network_s, "move_s": self.move_s,
                "bytes_moved": self.bytes_moved, "compute_s": self.compute_s,
                "step_s": list(self.step_s), "death_s": self.death_s,
                "joins": [j.to_dict() for j in self.joins]}


@dataclass(frozen=True)
class JoinPrice:
    """One join, modelled (``s + T_net(block)``, docs/theory.md (A.9)) and measured (the
    record's ``spawn_s + block_s``)."""

    machine: int
    step: int
    spawn_s: float
    block_s: float
    measured_spawn_s: float
    measured_block_s: float

    @property
    def total_s(self) -> float:
        return self.spawn_s + self.block_s

    @property
    def measured_s(self) -> float:
        return self.measured_spawn_s + self.measured_block_s

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "total_s": self.total_s, "measured_s": self.measured_s}


def elastic_model(steps: Sequence[ElasticStep | Mapping[str, Any]], config: ElasticConfig,
                  policy: str, net: nm.Network, uncoded_policy: str = "uncoded",
                  prices: EventPrices | None = None) -> ElasticModel:
    """The elastic job's model over its recorded steps (their available sets): compute is
    the planner's ``predicted_s`` of the step line (docs/theory.md (A.2)), the messages and
    the uncoded baseline's moves (``policy == uncoded_policy``) are priced on ``net``
    (docs/theory.md (B.7)); machines that died and joined (``fault_tolerance = "ulfm"``)
    at ``prices`` (docs/theory.md (A.9))."""
    prices = prices or EventPrices()

    speeds = {i + 1: Fraction(str(s)) for i, s in enumerate(config.speeds)}
    machines = sorted(speeds)
    cols, L, rows = int(config.cols), int(config.L), int(config.rows)
    item = nm.ITEMSIZE[str(config.field or "float64")]
    net_s = move_s = death_s = 0.0
    moved = 0
    joins: list[JoinPrice] = []
    layout = None
    per_step = []
    sts = [as_step(s) for s in steps]
    for st in sts:
        avail = list(st.available)
        idle = [n for n in machines if n not in avail]
        if policy == uncoded_policy:
            now = uncoded_split(speeds, avail, rows)
            if layout is None:
                layout = uncoded_split(speeds, avail, rows)  # the setup's split
            mv = uncoded_moves(layout, now)
            mvt = nm.phase_seconds(nm.uncoded_move_traffic(now, mv, cols, item, idle), net)
            stt = nm.phase_seconds(nm.uncoded_step_traffic(now, cols, item), net)
            m_s, s_s = (mvt.seconds if mv else 0.0), stt.seconds
            moved += sum(m.stop - m.start for m in mv) * cols * item
            layout = now
        else:
            plan = make_plan(policy, speeds, L, avail, rows=rows // L)
            s_s = nm.phase_seconds(nm.elastic_step_traffic(plan, cols, item, idle), net).seconds
            m_s = 0.0
        d_s = step_death_s(st.lost, st.preempted, st.replanned, prices)
        per_step.append(float(st.predicted_s) + m_s + s_s + d_s)
        net_s += s_s
        move_s += m_s
        death_s += d_s
        joins += [JoinPrice(machine=int(j["machine"]), step=int(j["step"]),
                            spawn_s=prices.spawn_s,
                            block_s=block_seconds(int(j["machine"]), rows // L, cols,
                                                  str(config.field or "float64"), net),
                            measured_spawn_s=float(j["spawn_s"]),
                            measured_block_s=float(j["block_s"])) for j in st.joined]
    return ElasticModel(total_s=sum(per_step), network_s=net_s, move_s=move_s,
                        bytes_moved=moved,
                        compute_s=sum(float(s.predicted_s) for s in sts), step_s=per_step,
                        death_s=death_s, joins=tuple(joins))


@dataclass(frozen=True)
class ElasticMeasured:
    """The measured side of an elastic job (:func:`elastic_measured`)."""

    total_s: float
    move_s: float
    bytes_moved: int
    steps: int
    verified: bool

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def elastic_measured(steps: Sequence[ElasticStep | Mapping[str, Any]]) -> ElasticMeasured:
    sts = [as_step(s) for s in steps]
    return ElasticMeasured(total_s=sum(float(s.wall_s) for s in sts),
                           move_s=sum(float(s.move_s or 0.0) for s in sts),
                           bytes_moved=int(sum(int(s.bytes_moved or 0) for s in sts)),
                           steps=len(sts), verified=all(bool(s.verified) for s in sts))


@dataclass(frozen=True)
class ElasticCase:
    """One policy of an elastic job: measured beside the model."""

    measured: ElasticMeasured
    model: ElasticModel

    def to_dict(self) -> dict[str, Any]:
        return {"measured": self.measured.to_dict(), "model": self.model.to_dict()}


@dataclass(frozen=True)
class ElasticComparison:
    """An elastic trace run coded and uncoded, each beside its model."""

    coded: ElasticCase
    uncoded: ElasticCase

    @property
    def uncoded_over_coded(self) -> dict[str, float | None]:
        """Total time of the uncoded baseline over the coded job's, measured and modelled."""
        meas = ratio(self.uncoded.measured.total_s, self.coded.measured.total_s)
        mod = ratio(self.uncoded.model.total_s, self.coded.model.total_s)
        return {"measured": meas, "model": mod, "measured_over_model": ratio(meas, mod)}

    @property
    def verified(self) -> bool:
        return self.coded.measured.verified and self.uncoded.measured.verified

    def to_dict(self) -> dict[str, Any]:
        return {"coded": self.coded.to_dict(), "uncoded": self.uncoded.to_dict(),
                "uncoded_over_coded": self.uncoded_over_coded}


# --- seconds per phase -------------------------------------------------------------------

def job_seconds(config: CodedConfig | Mapping[str, Any], table: Table,
                cores: int | None = None) -> PredictedSeconds:
    """The calibrated model of a coded job (docs/theory.md (C.4)) at its config line's
    parameters, its servers sharing ``cores`` cores (None: a core each)."""
    c = config if isinstance(config, CodedConfig) else CodedConfig.from_record(dict(config))
    return predict_seconds(run_params(c), table, cores=cores)
