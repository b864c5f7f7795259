"""The network benchmark (issue 19): the coded job and the elastic job on an emulated
cluster with shaped links, measured beside the network model (docs/theory.md (B.7)).

In one run, on emulated clusters made by ``mpi-coded cluster`` (root; one host per rank
with ``--slots 1``: the master on ``node1``, server ``s`` / machine ``n`` on the next
hosts; a cluster per link setting, named ``t19c*``, always taken down, also on an error
or Ctrl-C; deep queues that drop nothing, the default, and TCP Reno on every host,
``--tcp`` (:data:`TCP`)):

1. **calibration**, at each rate on the rate's cluster: one MPI message of a few sizes
   between two hosts (round trips with a 1-byte answer, median of the repetitions),
   fitted as ``t = 2 a + 8 bytes / (e rate)`` (``efficiency`` ``e``); a burst of 200
   header-sized messages (``alpha``, seconds per message); every server host sending to
   every other at once (the uncoded shuffle's pattern: ``fabric``, the bits per second
   all links carry together on this machine).  Written into the calibration file's
   ``network`` object (``--calibration``; the first rate's at the top, every rate's in
   ``by_rate``); every model value of the bench uses its rate's;
2. **coded shuffle**: uc, cmr, unified, bdc, lt at 100 Mbit/s and 1 Gbit/s, ``p2p`` and
   ``bcast`` (uc has no multicasts: its bcast case is its p2p run): the measured
   ``shuffle_s`` (median over repetitions) over the model's shuffle seconds for the plan
   of every repetition's real finishing order (``finishing_order`` of its run line):
   the shuffle fitted on the job itself (docs/theory.md (B.8)), trained at each rate on
   uc, cmr and unified with ``p2p`` (:data:`TRAINING`), every other case held out; beside it
   the fit a previous run left in the calibration file (held out across runs) and the
   link-calibrated (B.7) model; ``cmr_over_uc_shuffle`` measured and modelled, beside
   the plain load ratio ``L_cmr / L_uc`` (a broadcast medium) and the bytes ratio;
3. **the unified trade-off**: total latency (encode + map + shuffle + reduce) against
   every feasible ``q`` at ``K = 9`` at 100 Mbit/s, under the shifted-exponential map
   throttle (``--t-row``), measured beside the model (map: the job's own straggler draws
   through the map-end rule; shuffle and gather: the network model; encode and decode:
   the servers' measured compute seconds, which the network model does not price), and
   the best ``q`` of each;
4. **the elastic job** on the seed schedule and on a 20-step random trace, coded
   (``heterogeneous``) and ``uncoded``, at 100 Mbit/s and 1 Gbit/s: total step time,
   ``bytes_moved``, ``move_s``, beside the model (every step: the planner's predicted
   compute seconds plus the step's messages and the uncoded baseline's moves priced on
   the links); ``uncoded_over_coded`` measured and modelled;
5. **link heterogeneity**: the first server's / machine's host at a tenth of the others'
   100 Mbit/s: every scheme (p2p) and both elastic policies, measured and modelled,
   against the uniform 100 Mbit/s runs.

Every run's outputs are verified (the jobs check every product; a line that did not
verify fails the bench).  Progress goes to stderr; the last line of stdout is one JSON
object.  ``--quick``: a smoke version (one rate, two schemes, the seed schedule, small
sizes; about 40 s).  ``--out DIR`` keeps every job's JSON lines.

    .venv/bin/python scripts/bench_network.py [--quick] [--reps N] [--out DIR] [--calibration FILE]
    .venv/bin/python scripts/bench_network.py --replay DIR [--no-write-calibration]

Internal: ``--p2p-worker SIZES`` is the calibration's MPI program (run under mpiexec).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mpi_coded.analysis import network as nm  # noqa: E402
from mpi_coded.analysis.shuffle_fit import (  # noqa: E402
    ShuffleFit,
    TrainingCase,
    fit_shuffle,
    terms,
)

SCHEMES = ("uc", "cmr", "unified", "bdc", "lt")
MODES = ("p2p", "bcast")
CALIBRATION = ROOT / "docs" / "runs" / "calibration.json"
TCP = "reno"
"""The hosts' TCP congestion control (``mpi-coded cluster up --tcp``; a namespace may always
choose Reno).  Loss-based TCP over the links' deep FIFO queues shares a link's rate among
the flows crossing it as the model's fluid sharing does.  This machine's own, BBR, paces
each flow at its estimate of its share, carried over from the previous shuffle (the
connections idle for the gather between two), and takes round trips to notice a larger
share: under BBR uc's 8 large flows per host took 1.22-1.34x cmr's transfer time for
1.14x the bytes (the slowest finisher's, three runs), under Reno 1.10-1.18x
(docs/benchmarks.md, "The network")."""
TRAINING = (("p2p", "uc"), ("p2p", "unified"), ("p2p", "cmr"))
"""The shuffle fit's training cases at each rate (docs/theory.md (B.8)): uc's few large
unicasts and cmr's many small multicasts (both limited by the fabric: its multiplier and
the cost per message), unified's multicasts (limited by the slowest host); every other
scheme and every ``bcast`` case is held out."""


def progress(msg: str) -> None:
    print(f"[bench_network {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- sizes ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Sizes:
    """What the bench runs (``full`` or ``quick``)."""

    quick: bool = False
    K: int = 9
    q: int = 6
    mu: str = "1/3"
    m: int = 720
    n: int = 20
    N: int = 5400
    field: str = "float64"
    bdc_T: int = 10
    reps: int = 3
    rates: tuple[str, ...] = ("100mbit", "1gbit")
    schemes: tuple[str, ...] = SCHEMES
    modes: tuple[str, ...] = MODES
    slow_factor: int = 10
    hetero_reps: int = 1
    hetero: bool = True
    hetero_schemes: tuple[str, ...] = ("uc", "cmr", "unified", "lt")
    hetero_traces: tuple[str, ...] = ("seed",)
    # the unified trade-off
    to_m: int = 504
    to_N: int = 2700
    to_t_row: float = 0.003
    to_reps: int = 3
    to_qs: tuple[int, ...] | None = None  # None: every feasible q; (): no trade-off
    # calibration
    cal_sizes: tuple[int, ...] = (1 << 20, 4 << 20, 8 << 20)
    cal_reps: int = 3
    # the elastic job
    el_cols: int = 1000
    el_traces: tuple[str, ...] = ("seed", "random20")
    el_rates: tuple[str, ...] = ("100mbit", "1gbit")


FULL = Sizes()
QUICK = Sizes(quick=True, K=4, q=2, mu="1/2", m=240, n=10, N=480, reps=1, rates=("100mbit",),
              schemes=("uc", "cmr"), modes=("p2p",), hetero=False, to_m=240, to_N=240,
              to_t_row=0.001, to_reps=1, to_qs=(), cal_sizes=(1 << 20, 2 << 20),
              cal_reps=1, el_cols=200, el_traces=("small",), el_rates=("100mbit",))


def coded_params(scheme: str, K: int, q: int, mu: str, m: int, n: int, N: int, T: int,
                 field_name: str) -> Any:
    """The runnable job of ``scheme`` at (about) ``m`` rows (``Scheme.rows_per_batch_for``)."""
    from mpi_coded.coded.schemes import coded_params as make
    from mpi_coded.coded.schemes import get

    eta = get(scheme).rows_per_batch_for(K, q, mu, m)
    return make(scheme, K, q, mu, eta, n, N, T, field_name)


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
            except Exception:  # noqa: BLE001 -- a rule of the scheme: not at this m
                if cand == m and "mu * q" in str(sys.exc_info()[1]):
                    break
    return out


def tradeoff_m(K: int, mu: str, m: int, n: int, N: int, field_name: str,
               qs: Sequence[int]) -> int:
    """The smallest ``m' >= m`` at which every ``q`` of ``qs`` runs with ``m'`` rows."""
    for cand in range(m, 4 * m + 1):
        try:
            if all(coded_params("unified", K, q, mu, cand, n, N, 1, field_name).m == cand
                   for q in qs):
                return cand
        except Exception:  # noqa: BLE001 -- not runnable at this m: the next
            continue
    raise SystemExit(f"no m in [{m}, {4 * m}] runs every q of {list(qs)}")


# --- the pure part: model values from result lines --------------------------------------

def network_for(ranks: int, rate: str, rate_of: Sequence[str], alpha: float, eff: float,
                elastic: bool = False, fabric: float | None = None) -> nm.Network:
    return nm.make_network(ranks, rate, rate_of, alpha, eff,
                           rank_name=nm.elastic_rank_name if elastic else nm.coded_rank_name,
                           fabric=fabric)


def run_params(run: Mapping[str, Any]) -> Any:
    """The job parameters of a coded run line."""
    from mpi_coded.coded.schemes import coded_params as make

    return make(run["scheme"], run["K"], run["q"], run["mu"], run["rows_per_batch"],
                run["n"], run["N"], run["T"], run["field"])


def coded_model(run: Mapping[str, Any], multicast: str, net: nm.Network,
                fit: ShuffleFit | None = None) -> dict[str, Any]:
    """The network model of one coded run line: the plan of its real finishing order;
    ``shuffle_s`` the fitted shuffle (:class:`ShuffleFit`) when ``fit`` is given, else the
    link-calibrated one (``shuffle_link_s``, always there)."""
    from mpi_coded.coded.placement import build_placement

    p = run_params(run)
    cn = nm.coded_network(build_placement(p), net, multicast, "binomial",
                          run["finishing_order"])
    assert list(cn.plan.Q) == list(run["Q"]), (cn.plan.Q, run["Q"])
    sh, ga = cn.phases["shuffle"], cn.phases["gather"]
    host_s, fabric_s, n_max = terms(sh)
    return {"shuffle_s": fit.seconds(sh) if fit is not None else sh.seconds,
            "shuffle_link_s": sh.seconds, "host_s": host_s, "fabric_s": fabric_s,
            "copies": n_max,
            "gather_s": ga.seconds, "shuffle_bytes": sh.network_bytes,
            "slowest": sh.slowest, "load": float(cn.plan.load)}


def server_transfer(run: Mapping[str, Any]) -> float:
    """The slowest finisher's own transfer (``server_shuffle_s``: after its plan)."""
    return max((float(v) for v in run.get("server_shuffle_s", {}).values()), default=0.0)


def training_case(name: str, runs: Sequence[Mapping[str, Any]], multicast: str,
                  net: nm.Network) -> TrainingCase:
    """A case of the shuffle fit from its run lines (medians over the repetitions)."""
    models = [coded_model(r, multicast, net) for r in runs]
    return TrainingCase(name, median([m["host_s"] for m in models]),
                        median([m["fabric_s"] for m in models]),
                        median([server_transfer(r) for r in runs]),
                        median([float(r["shuffle_s"]) - server_transfer(r) for r in runs]),
                        median([float(m["copies"]) for m in models]))


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def iqr(xs: Sequence[float]) -> list[float]:
    if len(xs) < 2:
        return [float(xs[0]), float(xs[0])] if xs else []
    qs = statistics.quantiles(xs, n=4, method="inclusive")
    return [float(qs[0]), float(qs[2])]


def summarise_coded(runs: Sequence[Mapping[str, Any]], multicast: str, net: nm.Network,
                    raw: nm.Network | None = None, fit: ShuffleFit | None = None,
                    prior: ShuffleFit | None = None, training: bool = False
                    ) -> dict[str, Any]:
    """Measured shuffle (median, IQR) beside the model's (median over the same
    repetitions' plans): fitted with ``fit`` (this run's training cases), with ``prior``
    (the fit a previous run left in the calibration file: held out across runs), and the
    link-calibrated one; ``raw`` (alpha 0, efficiency 1) for reference."""
    models = [coded_model(r, multicast, net, fit) for r in runs]
    meas = [float(r["shuffle_s"]) for r in runs]
    plan = [max(r.get("server_plan_s", {}).values(), default=0.0) for r in runs]
    groups = [max(r.get("server_groups_s", {}).values(), default=0.0) for r in runs]
    transfer = [server_transfer(r) for r in runs]
    mod = [m["shuffle_s"] for m in models]
    link = [m["shuffle_link_s"] for m in models]
    wire = [max(m["host_s"], m["fabric_s"]) for m in models]
    out = {"reps": len(runs), "training": training, "shuffle_s": median(meas),
           "shuffle_iqr": iqr(meas), "shuffle_model_s": median(mod),
           "shuffle_measured_over_model": median(meas) / median(mod) if median(mod) else None,
           "shuffle_link_model_s": median(link),
           "shuffle_measured_over_link_model": (median(meas) / median(link)
                                                if median(link) else None),
           "plan_s": median(plan), "groups_s": median(groups),
           "transfer_s": median(transfer),
           "transfer_iqr": iqr(transfer),
           "transfer_measured_over_model": (median(transfer) / median(wire)
                                            if median(wire) else None),
           "reduce_s": median([float(r["reduce_s"]) for r in runs]),
           "gather_model_s": median([m["gather_s"] for m in models]),
           "total_s": median([float(r["total_s"]) for r in runs]),
           "bytes_on_wire": int(median([float(r["bytes_on_wire"]) for r in runs])),
           "model_bytes": int(median([m["shuffle_bytes"] for m in models])),
           "load": models[0]["load"], "slowest_host_model": models[0]["slowest"],
           "verified": all(bool(r.get("verified")) for r in runs)}
    if raw is not None:
        out["shuffle_model_raw_s"] = median([coded_model(r, multicast, raw)["shuffle_s"]
                                             for r in runs])
    if prior is not None:
        pm = median([coded_model(r, multicast, net, prior)["shuffle_s"] for r in runs])
        out["shuffle_prior_model_s"] = pm
        out["shuffle_measured_over_prior_model"] = median(meas) / pm if pm else None
    return out


def map_model(run: Mapping[str, Any], t_row: float, straggler: str, seed: int) -> float:
    """The map phase the throttle gives for this repetition (docs/theory.md (B.6)): every
    server's target (:meth:`CodedJob.map_target`, the same draws as the run), the servers
    finishing in target order, the phase ending when the map-end rule holds."""
    from mpi_coded.coded.job import CodedJob
    from mpi_coded.coded.mapend import map_phase_done
    from mpi_coded.coded.placement import build_placement

    p = run_params(run)
    pl = build_placement(p)
    job = CodedJob(p, straggler=straggler, t_row=t_row, seed=seed)
    targets = sorted((job.map_target(s, len(pl.stored_rows(s)), int(run["rep"])), s)
                     for s in range(p.K))
    done: list[int] = []
    for t, s in targets:
        done.append(s)
        if map_phase_done(pl, done):
            return float(t)
    return float(targets[-1][0])


def tradeoff_point(runs: Sequence[Mapping[str, Any]], net: nm.Network, t_row: float,
                   seed: int, fit: ShuffleFit | None = None) -> dict[str, Any]:
    """One ``q`` of the trade-off: measured phases and total (medians) beside the model's
    (map from the draws, shuffle and gather from the network model, encode and decode
    compute as the servers measured it)."""
    totals, model_totals, phases = [], [], []
    for r in runs:
        cm = coded_model(r, "p2p", net, fit)
        mp = map_model(r, t_row, "shiftexp", seed)
        enc = max(r["server_encode_s"].values()) if r.get("server_encode_s") else 0.0
        dec = max(r["server_decode_s"].values()) if r.get("server_decode_s") else 0.0
        model = {"encode": enc, "map": mp, "shuffle": cm["shuffle_s"],
                 "reduce": dec + cm["gather_s"]}
        totals.append(float(r["encode_s"] + r["map_s"] + r["shuffle_s"] + r["reduce_s"]))
        model_totals.append(sum(model.values()))
        phases.append((r, model))
    med = {k: median([float(r[f"{k}_s"]) for r, _ in phases])
           for k in ("encode", "map", "shuffle", "reduce")}
    mmed = {k: median([m[k] for _, m in phases]) for k in ("encode", "map", "shuffle", "reduce")}
    return {"q": runs[0]["q"], "m": runs[0]["m"], "reps": len(runs),
            "total_s": median(totals), "total_iqr": iqr(totals),
            "model_total_s": median(model_totals), "phases": med, "model_phases": mmed,
            "load": float(Fraction(runs[0]["load_plan_exact"])),
            "verified": all(bool(r.get("verified")) for r in runs)}


def best(points: Sequence[Mapping[str, Any]], key: str) -> int | None:
    return int(min(points, key=lambda p: p[key])["q"]) if points else None


def elastic_model(steps: Sequence[Mapping[str, Any]], config: Mapping[str, Any],
                  policy: str, net: nm.Network) -> dict[str, Any]:
    """The elastic job's model over its recorded steps (their available sets): compute is
    the planner's ``predicted_s`` of the step line (the elastic model), the messages and
    moves are priced on ``net`` (docs/theory.md (B.7))."""
    from mpi_coded.cec.plan import make_plan
    from mpi_coded.cec.uncoded import moves as uncoded_moves
    from mpi_coded.cec.uncoded import uncoded_split

    speeds = {i + 1: Fraction(str(s)) for i, s in enumerate(config["speeds"])}
    machines = sorted(speeds)
    cols, L, rows = int(config["cols"]), int(config["L"]), int(config["rows"])
    item = nm.ITEMSIZE[str(config.get("field", "float64"))]
    total = net_s = move_s = 0.0
    moved = 0
    layout = None
    per_step = []
    for st in steps:
        avail = list(st["available"])
        idle = [n for n in machines if n not in avail]
        if policy == "uncoded":
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
        step = float(st["predicted_s"]) + m_s + s_s
        per_step.append(step)
        total += step
        net_s += s_s
        move_s += m_s
    return {"total_s": total, "network_s": net_s, "move_s": move_s, "bytes_moved": moved,
            "compute_s": sum(float(s["predicted_s"]) for s in steps), "step_s": per_step}


def elastic_measured(steps: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {"total_s": sum(float(s["wall_s"]) for s in steps),
            "move_s": sum(float(s.get("move_s") or 0.0) for s in steps),
            "bytes_moved": int(sum(int(s.get("bytes_moved") or 0) for s in steps)),
            "steps": len(steps), "verified": all(bool(s["verified"]) for s in steps)}


def fit_link(points: Sequence[tuple[int, float]], rate_bps: float) -> dict[str, float]:
    """``t = 2 alpha + 8 bytes / (e rate)`` by least squares over ``(bytes, seconds)``
    (a round trip: the message and a 1-byte answer, each one MPI message)."""
    xs = [float(b) for b, _ in points]
    ys = [float(t) for _, t in points]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else my / mx
    icpt = my - slope * mx
    eff = min(1.0, 8.0 / (slope * rate_bps)) if slope > 0 else 1.0
    return {"alpha_s": max(0.0, icpt / 2.0), "efficiency": eff, "slope_s_per_byte": slope,
            "intercept_s": icpt}


def write_link_calibration(path: Path, section: Mapping[str, Any]) -> dict[str, Any]:
    """Set the calibration file's ``network`` object to ``section`` (keeping everything
    else; a new file holds only it), checked as ``model --calibration`` reads it."""
    doc: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    doc["network"] = dict(section)
    alpha, eff = nm.link_calibration(doc)
    assert alpha is not None and eff is not None and nm.link_fabric(doc) is not None
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return doc["network"]


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


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b not in (None, 0) else None


# --- the emulated cluster ----------------------------------------------------------------

class Failed(Exception):
    pass


@dataclass
class Cluster:
    """``mpi-coded cluster up`` of ``hosts`` hosts, one slot each; jobs through ``run``."""

    name: str
    hosts: int
    rate: str
    rate_of: tuple[str, ...] = ()
    base: Path = field(default_factory=lambda: Path(tempfile.gettempdir()))
    replay: bool = False
    dir: Path = field(init=False)
    up_ok: bool = False

    def __post_init__(self) -> None:
        self.dir = self.base / f"cluster-{self.name}"

    def cli(self, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mpi_coded", "cluster", args[0], "--name",
                               self.name, "--dir", str(self.dir), *args[1:]],
                              capture_output=True, text=True, timeout=timeout, cwd=ROOT)

    def up(self) -> None:
        args = ["up", "--hosts", str(self.hosts), "--slots", "1", "--rate", self.rate,
                "--tcp", TCP]
        for item in self.rate_of:
            args += ["--rate-of", item]
        r = self.cli(*args)
        if r.returncode != 0:
            raise Failed(f"cluster up {self.name}: {r.stderr.strip() or r.stdout.strip()}")
        self.up_ok = True
        progress(r.stdout.strip().splitlines()[0])

    def down(self) -> None:
        if self.up_ok or (self.dir / "cluster.json").exists():
            r = self.cli("down")
            self.up_ok = False
            if r.returncode != 0:
                progress(f"cluster down {self.name} failed: {r.stderr.strip()}")

    def run(self, n: int, program: list[str], timeout: float = 600.0) -> str:
        """``cluster run -- mpiexec -n n PROGRAM`` in its own process group (killed with
        every rank on a timeout or an interruption); its output."""
        from mpi_coded.proctree import kill_tree

        exe = Path(sys.executable).parent / "mpiexec"
        cmd = [sys.executable, "-m", "mpi_coded", "cluster", "run", "--name", self.name,
               "--dir", str(self.dir), "--timeout", str(timeout), "--", str(exe), "-n",
               str(n), *program]
        proc = subprocess.Popen(cmd, start_new_session=True, cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace")
        try:
            out, _ = proc.communicate(timeout=timeout + 60)
        except BaseException:
            kill_tree(proc.pid)
            proc.communicate()
            raise
        if proc.returncode != 0:
            raise Failed(f"failed ({proc.returncode}): {' '.join(program)}\n{out[-3000:]}")
        return out


@contextmanager
def cluster(name: str, hosts: int, rate: str, rate_of: Sequence[str] = (),
            base: Path | None = None, replay: bool = False) -> Iterator[Cluster]:
    """A cluster up for the ``with`` block, down after it whatever happens; ``replay``:
    none (the jobs' lines are read from the output directory)."""
    c = Cluster(name, hosts, rate, tuple(rate_of), base or Path(tempfile.gettempdir()), replay)
    if replay:
        yield c
        return
    try:
        c.up()
        yield c
    finally:
        # no signal may interrupt the teardown (a second Ctrl-C would leave the hosts up)
        stop = {signal.SIGINT, signal.SIGTERM}
        old = signal.pthread_sigmask(signal.SIG_BLOCK, stop)
        try:
            c.down()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def cluster_name(tag: str) -> str:
    """``t19c`` + a tag letter + a digit of this process: 6 characters."""
    return f"t19c{tag}{os.getpid() % 10}"


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


# --- the MPI parts -----------------------------------------------------------------------

def p2p_worker(sizes: Sequence[int], reps: int) -> None:
    """Rank 0 sends rank 1 one message of each size, ``reps`` times (plus a warm-up);
    rank 1 answers each with 1 byte; then 64-byte round trips (``alpha``).  Rank 0 prints
    one JSON object."""
    import socket

    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    hosts = comm.gather(socket.gethostname(), root=0)
    ack = np.zeros(1, dtype=np.uint8)
    out: dict[str, list[float]] = {}
    for size in sizes:
        buf = np.ones(size, dtype=np.uint8) if rank == 0 else np.zeros(size, dtype=np.uint8)
        walls = []
        for _ in range(reps + 1):
            comm.Barrier()
            if rank == 0:
                t0 = time.perf_counter()
                comm.Send(buf, dest=1, tag=3)
                comm.Recv(ack, source=1, tag=4)
                walls.append(time.perf_counter() - t0)
            elif rank == 1:
                comm.Recv(buf, source=0, tag=3)
                assert int(buf.min()) == 1, "the message arrived corrupted"
                comm.Send(ack, dest=0, tag=4)
        out[str(size)] = walls[1:]
    # alpha: BURST header-sized messages back to back, then the answer; per message
    small = [np.ones(64, dtype=np.uint8) for _ in range(BURST)]
    bursts = []
    for _ in range(reps + 1):
        comm.Barrier()
        if rank == 0:
            t0 = time.perf_counter()
            MPI.Request.Waitall([comm.Isend(b, dest=1, tag=5) for b in small])
            comm.Recv(ack, source=1, tag=6)
            bursts.append((time.perf_counter() - t0) / BURST)
        elif rank == 1:
            MPI.Request.Waitall([comm.Irecv(b, source=0, tag=5) for b in small])
            comm.Send(ack, dest=0, tag=6)
    out["burst64"] = bursts[1:]
    if rank == 0:
        print(json.dumps({"walls": out, "hosts": hosts}))


BURST = 200
"""Header-sized messages of the calibration's burst (``alpha``: seconds per message)."""


def exchange_worker(nbytes: int, reps: int) -> None:
    """Every rank but 0 (the master's host, idle as in the shuffle) sends ``nbytes`` to
    every other such rank, split evenly, and receives as much, all at once (the uncoded
    shuffle's pattern), ``reps`` times after a warm-up; rank 0 prints the slowest rank's
    seconds per round."""
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    peers = [r for r in range(1, size) if r != rank]
    each = max(1, nbytes // max(1, len(peers)))
    outs = [np.ones(each, dtype=np.uint8) for _ in peers]
    ins = [np.zeros(each, dtype=np.uint8) for _ in peers]
    walls = []
    for _ in range(reps + 1):
        comm.Barrier()
        t0 = time.perf_counter()
        if rank > 0:
            reqs = [comm.Irecv(b, source=p, tag=7) for p, b in zip(peers, ins)]
            reqs += [comm.Isend(b, dest=p, tag=7) for p, b in zip(peers, outs)]
            MPI.Request.Waitall(reqs)
            assert all(int(b.min()) == 1 for b in ins), "a message arrived corrupted"
        w = comm.gather(time.perf_counter() - t0, root=0)
        if rank == 0:
            assert w is not None
            walls.append(max(w[1:]))
    if rank == 0:
        print(json.dumps({"exchange_walls": walls[1:], "bytes": each * len(peers),
                          "hosts": size - 1}))


def calibrate(c: Cluster, sz: Sizes, hosts: int, out_dir: Path) -> dict[str, Any]:
    """The link calibration at ``c``'s rate (module docstring): one stream between two
    hosts (sizes: the single stream's efficiency, reported), a burst of header-sized
    messages (``alpha``, seconds per message), then every server host sending to every
    other at once (``efficiency``: the fraction of the rate the hosts achieve together,
    sharing this machine's cores, as in the shuffle)."""
    from mpi_coded.rates import parse_rate

    saved = out_dir / f"calibration-{c.rate}.json"
    if c.replay:
        return dict(json.loads(saved.read_text()))
    me = str(Path(__file__).resolve())
    rate_bps = parse_rate(c.rate, "--rate")
    exchange_bytes = max(sz.cal_sizes) * (4 if rate_bps >= 5e8 else 1)
    out = c.run(hosts, [sys.executable, me, "--p2p-worker", ",".join(map(str, sz.cal_sizes)),
                        "--p2p-reps", str(sz.cal_reps), "--exchange-worker",
                        str(exchange_bytes)],
                timeout=300)
    docs = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    doc = next(d for d in docs if "walls" in d)
    exch = next(d for d in docs if "exchange_walls" in d)
    assert len(set(doc["hosts"])) == len(doc["hosts"]), doc["hosts"]
    pts = [(int(b), median(w)) for b, w in doc["walls"].items()
           if b.isdigit() and int(b) in sz.cal_sizes]
    fit = fit_link(pts, rate_bps)
    alpha = median(doc["walls"]["burst64"])
    wall = median(exch["exchange_walls"])
    exchange_eff = min(1.0, 8 * int(exch["bytes"]) / (wall * rate_bps))
    fabric = 8 * int(exch["bytes"]) * int(exch["hosts"]) / wall
    cal = {"alpha_s": alpha, "efficiency": fit["efficiency"], "fabric_bps": fabric,
           "rate": c.rate, "exchange_efficiency": exchange_eff,
           "stream_efficiency": fit["efficiency"], "stream_fit": fit,
           "stream_points": [[b, t] for b, t in pts], "exchange_bytes": exchange_bytes,
           "exchange_hosts": exch["hosts"], "exchange_walls": exch["exchange_walls"]}
    shown = ", ".join(f"{b}B {t:.4f}s" for b, t in pts)
    progress(f"calibration {c.rate}: alpha {alpha * 1e6:.0f} us; efficiency (one stream) "
             f"{fit['efficiency']:.3f} ({shown}); {exch['hosts']} hosts at once "
             f"{exchange_eff:.3f} of the rate each: fabric {fabric / 1e6:.0f} Mbit/s")
    saved.write_text(json.dumps(cal) + "\n")
    return cal


def coded_args(p: Any, multicast: str, reps: int, out: Path, extra: Sequence[str] = ()
               ) -> list[str]:
    return [sys.executable, "-m", "mpi_coded", "run", "coded", "--scheme", p.scheme, "--K",
            str(p.K), "--q", str(p.q), "--mu", str(p.mu), "--rows-per-batch",
            str(p.rows_per_batch), "--n", str(p.n), "--N", str(p.N), "--T", str(p.T),
            "--field", p.field_name, "--reps", str(reps), "--multicast", multicast,
            "--timeout", "300", "--out", str(out), *extra]


def run_coded(c: Cluster, p: Any, multicast: str, reps: int, out: Path,
              extra: Sequence[str] = ()) -> list[dict[str, Any]]:
    t0 = time.perf_counter()
    if not c.replay:
        if out.exists():
            out.unlink()
        c.run(p.K + 1, coded_args(p, multicast, reps, out, extra), timeout=900)
    lines = read_lines(out)
    runs = [x for x in lines if x.get("kind") == "run"]
    summ = [x for x in lines if x.get("kind") == "summary"]
    if not runs or not all(r.get("verified") for r in runs) or not (
            summ and summ[-1].get("all_verified")):
        raise Failed(f"{out.name}: not every output verified")
    sh = ", ".join(f"{r['shuffle_s']:.3f}" for r in runs)
    tot = ", ".join(f"{r['total_s']:.2f}" for r in runs)
    progress(f"{out.stem}: shuffle {sh} s, total {tot} s, verified "
             f"({time.perf_counter() - t0:.0f} s)")
    return runs


def run_elastic(c: Cluster, toml: str, out: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    cfg_path = out.with_suffix(".toml")
    if not c.replay:
        cfg_path.write_text(toml)
        if out.exists():
            out.unlink()
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    cfg = tomllib.loads(toml)
    t0 = time.perf_counter()
    if not c.replay:
        c.run(int(cfg["N"]) + 1, [sys.executable, "-m", "mpi_coded", "run", "cec", "--config",
                                  str(cfg_path), "--out", str(out)], timeout=900)
    steps = [x for x in read_lines(out) if x.get("kind") == "step"]
    if not steps or not all(s["verified"] for s in steps):
        raise Failed(f"{out.name}: not every step verified")
    progress(f"{out.stem}: {len(steps)} steps, total {sum(s['wall_s'] for s in steps):.2f} s, "
             f"moved {sum(int(s.get('bytes_moved') or 0) for s in steps)} B, verified "
             f"({time.perf_counter() - t0:.0f} s)")
    return cfg, steps


SEED_TOML = ('job = "cec"\nN = 6\nL = 3\nspeeds = [1, 1, 1.5, 1.5, 2, 2]\nrows = 1260\n'
             'cols = {cols}\nfield = "float64"\nt_row = 0.001\nseed = 0\ntimeout_s = 120.0\n'
             'policy = "{policy}"\n[availability]\nkind = "schedule"\n'
             'schedule = [[1, 2, 3, 4, 5, 6], [1, 2, 3, 5, 6], [1, 2, 3, 5], [2, 3, 5]]\n')
RANDOM_TOML = ('job = "cec"\nN = 8\nL = 3\nspeeds = [1, 1, 1.5, 1.5, 2, 2, 3, 1]\nrows = 1200\n'
               'cols = {cols}\nfield = "float64"\nt_row = 0.0005\nseed = 3\ntimeout_s = 120.0\n'
               'policy = "{policy}"\n[availability]\nkind = "random"\np = 0.25\nsteps = 20\n')
SMALL_TOML = ('job = "cec"\nN = 4\nL = 2\nspeeds = [1, 1, 2, 2]\nrows = 840\ncols = {cols}\n'
              'field = "float64"\nt_row = 0.0005\nseed = 0\ntimeout_s = 120.0\n'
              'policy = "{policy}"\n[availability]\nkind = "schedule"\n'
              'schedule = [[1, 2, 3, 4], [1, 2, 4], [2, 4]]\n')
TRACES = {"seed": SEED_TOML, "random20": RANDOM_TOML, "small": SMALL_TOML}


# --- the bench ---------------------------------------------------------------------------

@dataclass
class Bench:
    sz: Sizes
    out: Path
    base: Path
    replay: bool = False
    prior: Mapping[str, Any] | None = None  # the calibration file's network object before
    cal: dict[str, dict[str, Any]] = field(default_factory=dict)
    fits: dict[str, ShuffleFit] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)

    def prior_fit(self, rate: str) -> ShuffleFit | None:
        """The shuffle fit a previous run wrote for ``rate``, if any."""
        from mpi_coded.analysis.shuffle_fit import rate_fit
        from mpi_coded.rates import parse_rate

        return rate_fit(self.prior, parse_rate(rate, "--rate"))

    def net(self, ranks: int, rate: str, rate_of: Sequence[str] = (),
            elastic: bool = False) -> nm.Network:
        cal = self.cal[rate]
        return network_for(ranks, rate, rate_of, cal["alpha_s"], cal["efficiency"], elastic,
                           cal.get("fabric_bps"))

    def coded_cases(self, c: Cluster, rate: str, rate_of: Sequence[str], modes: Sequence[str],
                    reps: int, tag: str, schemes: Sequence[str] | None = None
                    ) -> dict[str, dict[str, Any]]:
        sz = self.sz
        ranks = sz.K + 1
        net = self.net(ranks, rate, rate_of)
        raw = network_for(ranks, rate, rate_of, 0.0, 1.0)
        lines: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for scheme in schemes or sz.schemes:
            T = sz.bdc_T if scheme == "bdc" else 1
            p = coded_params(scheme, sz.K, sz.q, sz.mu, sz.m, sz.n, sz.N, T, sz.field)
            for mode in modes:
                run_mode = "p2p" if scheme == "uc" else mode
                if (run_mode, scheme) not in lines:
                    lines[(run_mode, scheme)] = run_coded(
                        c, p, run_mode, reps, self.out / f"{tag}-{scheme}-{run_mode}.jsonl")
        if rate not in self.fits:  # the first cases at this rate train the shuffle fit
            cases = [training_case(f"{s}/{m}", lines[(m, s)], m, net)
                     for m, s in TRAINING if (m, s) in lines]
            if cases:
                self.fits[rate] = fit_shuffle(cases)
                progress(f"shuffle fit at {rate}: {self.fits[rate].to_dict()}")
        fit, prior = self.fits.get(rate), self.prior_fit(rate)
        got: dict[str, dict[str, Any]] = {m: {} for m in modes}
        for (run_mode, scheme), runs in lines.items():
            for mode in modes:
                if run_mode != ("p2p" if scheme == "uc" else mode):
                    continue
                v = summarise_coded(runs, run_mode, net, raw, fit, prior,
                                    (run_mode, scheme) in TRAINING and not rate_of)
                # no multicasts: uc's bcast case is its p2p run
                got[mode][scheme] = v if mode == run_mode else {**v, "same_as": "p2p"}
        return {m: {s: got[m][s] for s in (schemes or sz.schemes) if s in got[m]}
                for m in modes}

    def tradeoff(self, c: Cluster) -> dict[str, Any]:
        sz = self.sz
        qs = (list(sz.to_qs) if sz.to_qs is not None else
              feasible_qs(sz.K, sz.mu, sz.to_m, sz.n, sz.to_N, sz.field))
        m = tradeoff_m(sz.K, sz.mu, sz.to_m, sz.n, sz.to_N, sz.field, qs)
        net = self.net(sz.K + 1, sz.rates[0])
        fit = self.fits.get(sz.rates[0])
        points = []
        for q in qs:
            p = coded_params("unified", sz.K, q, sz.mu, m, sz.n, sz.to_N, 1, sz.field)
            runs = run_coded(c, p, "p2p", sz.to_reps, self.out / f"tradeoff-q{q}.jsonl",
                             ["--straggler", "shiftexp", "--t-row", str(sz.to_t_row),
                              "--seed", "0"])
            points.append(tradeoff_point(runs, net, sz.to_t_row, 0, fit))
        return {"K": sz.K, "mu": sz.mu, "m": m, "N": sz.to_N, "n": sz.n, "t_row": sz.to_t_row,
                "rate": sz.rates[0], "qs": qs, "points": points,
                "best_q_measured": best(points, "total_s"),
                "best_q_model": best(points, "model_total_s")}

    def elastic(self, c: Cluster, rate: str, rate_of: Sequence[str], tag: str,
                traces: Sequence[str] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for trace in traces or self.sz.el_traces:
            row: dict[str, Any] = {}
            for policy in ("heterogeneous", "uncoded"):
                toml = TRACES[trace].format(cols=self.sz.el_cols, policy=policy)
                cfg, steps = run_elastic(c, toml, self.out / f"{tag}-cec-{trace}-{policy}.jsonl")
                net = self.net(int(cfg["N"]) + 1, rate, rate_of, elastic=True)
                key = "coded" if policy == "heterogeneous" else "uncoded"
                row[key] = {"measured": elastic_measured(steps),
                            "model": elastic_model(steps, cfg, policy, net)}
            row["uncoded_over_coded"] = {
                "measured": ratio(row["uncoded"]["measured"]["total_s"],
                                  row["coded"]["measured"]["total_s"]),
                "model": ratio(row["uncoded"]["model"]["total_s"],
                               row["coded"]["model"]["total_s"])}
            mo = row["uncoded_over_coded"]
            mo["measured_over_model"] = ratio(mo["measured"], mo["model"])
            out[trace] = row
        return out

    def run(self) -> dict[str, Any]:
        sz, t_start = self.sz, time.perf_counter()
        coded: dict[str, Any] = {}
        elastic: dict[str, Any] = {}
        tradeoff: dict[str, Any] = {}
        hosts = sz.K + 1
        for i, rate in enumerate(sz.rates):
            with cluster(cluster_name("abcdefg"[i]), hosts, rate, base=self.base,
                         replay=self.replay) as c:
                progress(f"link calibration at {rate}")
                self.cal[rate] = calibrate(c, sz, hosts, self.out)
                progress(f"coded job at {rate}")
                coded[rate] = self.coded_cases(c, rate, (), sz.modes, sz.reps, f"coded-{rate}")
                if i == 0 and sz.to_qs != ():
                    progress(f"the unified trade-off at {rate}")
                    tradeoff = self.tradeoff(c)
                if rate in sz.el_rates:
                    progress(f"elastic job at {rate}")
                    elastic[rate] = self.elastic(c, rate, (), f"{rate}")
        hetero: dict[str, Any] = {}
        if sz.hetero:
            rate = sz.rates[0]
            from mpi_coded.rates import format_rate, parse_rate

            slow = format_rate(parse_rate(rate, "--rate") // sz.slow_factor)
            # host 2: server 0 of the coded job, machine 1 of the elastic job
            with cluster(cluster_name("h"), hosts, rate, [f"2={slow}"], base=self.base,
                         replay=self.replay) as c:
                progress(f"link heterogeneity: host 2 at {slow}, the others at {rate}")
                hc = self.coded_cases(c, rate, ["rank1=" + slow], ("p2p",), sz.hetero_reps,
                                      "hetero", sz.hetero_schemes)
                he = self.elastic(c, rate, ["rank1=" + slow], "hetero", sz.hetero_traces)
            hetero = {"rate": rate, "slow_host_rate": slow, "slow_rank": 1, "coded": hc["p2p"],
                      "elastic": he}
        self.result = assemble(sz, self.cal, coded, tradeoff, elastic, hetero, self.fits)
        self.result["wall_s"] = time.perf_counter() - t_start
        return self.result


def assemble(sz: Sizes, cal: Mapping[str, Any], coded: Mapping[str, Any],
             tradeoff: Mapping[str, Any], elastic: Mapping[str, Any],
             hetero: Mapping[str, Any], fits: Mapping[str, ShuffleFit] | None = None
             ) -> dict[str, Any]:
    """The bench's JSON object: every figure, the flattened ratios and the targets (the
    shuffle's on the held-out cases; the training cases are listed)."""
    smm: dict[str, float | None] = {}
    tmm: dict[str, float | None] = {}
    prior: dict[str, float | None] = {}
    link: dict[str, float | None] = {}
    trained: list[str] = []
    cmr_uc: dict[str, Any] = {}
    for rate, by_mode in coded.items():
        for mode, by_scheme in by_mode.items():
            for scheme, v in by_scheme.items():
                key = f"{rate}/{mode}/{scheme}"
                smm[key] = v["shuffle_measured_over_model"]
                tmm[key] = v.get("transfer_measured_over_model")
                link[key] = v.get("shuffle_measured_over_link_model")
                if "shuffle_measured_over_prior_model" in v:
                    prior[key] = v["shuffle_measured_over_prior_model"]
                if v.get("training") and "same_as" not in v:
                    trained.append(key)
            if "cmr" in by_scheme and "uc" in by_scheme:
                c, u = by_scheme["cmr"], by_scheme["uc"]
                meas = ratio(c["shuffle_s"], u["shuffle_s"])
                mod = ratio(c["shuffle_model_s"], u["shuffle_model_s"])
                cmr_uc[f"{rate}/{mode}"] = {
                    "measured": meas, "model": mod, "measured_over_model": ratio(meas, mod),
                    "load_ratio": ratio(c["load"], u["load"]),
                    "bytes_ratio": ratio(c["model_bytes"], u["model_bytes"])}
    band = {"100mbit": (0.85, 1.15), "1gbit": (0.7, 1.3)}
    targets: dict[str, Any] = {}
    for key, v in smm.items():
        if key in trained or f"{key.rsplit('/', 2)[0]}/p2p/uc" in trained and key.endswith(
                "/bcast/uc"):
            continue  # fitted on it: ~1 by construction
        lo, hi = band.get(key.split("/")[0], (0.0, float("inf")))
        targets[f"shuffle {key} in [{lo}, {hi}]"] = v is not None and lo <= v <= hi
    for key, v in cmr_uc.items():
        mom = v["measured_over_model"]
        targets[f"cmr_over_uc {key} within 10%"] = mom is not None and abs(mom - 1) <= 0.10
    if tradeoff:
        targets["tradeoff best q measured == model"] = (tradeoff["best_q_measured"] ==
                                                        tradeoff["best_q_model"])
    for rate, traces in elastic.items():
        for trace, row in traces.items():
            uoc = row["uncoded_over_coded"]
            if rate == "100mbit":
                targets[f"elastic {trace} 100mbit uncoded_over_coded > 1"] = (
                    uoc["measured"] is not None and uoc["measured"] > 1)
            targets[f"elastic {trace} {rate} within 20% of model"] = (
                uoc["measured_over_model"] is not None
                and abs(uoc["measured_over_model"] - 1) <= 0.20)
    check: dict[str, Any] = {}
    if "100mbit" in coded and "1gbit" in coded:
        for scheme in coded["100mbit"].get("p2p", {}):
            a = coded["100mbit"]["p2p"][scheme]["shuffle_s"]
            b = coded["1gbit"]["p2p"].get(scheme, {}).get("shuffle_s")
            check[scheme] = ratio(a, b)
    verified = all(v["verified"] for by_mode in coded.values() for by_s in by_mode.values()
                   for v in by_s.values())
    verified = verified and all(p["verified"] for p in tradeoff.get("points", []))
    verified = verified and all(row[k]["measured"]["verified"] for traces in elastic.values()
                                for row in traces.values() for k in ("coded", "uncoded"))
    if hetero:
        verified = verified and all(v["verified"] for v in hetero["coded"].values())
        verified = verified and all(row[k]["measured"]["verified"]
                                    for row in hetero["elastic"].values()
                                    for k in ("coded", "uncoded"))
    return {"bench": "network", "quick": sz.quick,
            "sizes": {"K": sz.K, "q": sz.q, "mu": sz.mu, "m": sz.m, "n": sz.n, "N": sz.N,
                      "field": sz.field, "bdc_T": sz.bdc_T, "reps": sz.reps,
                      "el_cols": sz.el_cols},
            "calibration": dict(cal),
            "shuffle_fit": {r: f.to_dict() for r, f in (fits or {}).items()},
            "shuffle_training_cases": trained,
            "shuffle_measured_over_model": smm, "transfer_measured_over_model": tmm,
            "shuffle_measured_over_prior_model": prior,
            "shuffle_measured_over_link_model": link,
            "cmr_over_uc_shuffle": cmr_uc,
            "shuffle_100mbit_over_1gbit": check, "coded": coded, "tradeoff": tradeoff,
            "elastic": elastic, "heterogeneity": hetero, "all_verified": verified,
            "targets": targets, "targets_met": sum(bool(v) for v in targets.values()),
            "targets_total": len(targets)}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a short smoke version")
    ap.add_argument("--out", default=None, help="keep every job's JSON lines in DIR")
    ap.add_argument("--calibration", default=str(CALIBRATION),
                    help="the calibration file whose network object is written")
    ap.add_argument("--no-write-calibration", action="store_true",
                    help="do not write the network object (the bench still uses its fit)")
    ap.add_argument("--reps", type=int, default=None, metavar="N",
                    help="repetitions of each scheme's coded case at each rate (default 3; 1 "
                         "with --quick; the trade-off and the heterogeneity keep theirs); "
                         "with --replay, default: the replayed run's")
    ap.add_argument("--replay", default=None, metavar="DIR",
                    help="no MPI: recompute the JSON object from a previous --out DIR")
    ap.add_argument("--p2p-worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--p2p-reps", type=int, default=3, help=argparse.SUPPRESS)
    ap.add_argument("--exchange-worker", type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.p2p_worker is not None:  # the calibration's MPI program: a stream, then the exchange
        p2p_worker([int(x) for x in a.p2p_worker.split(",")], a.p2p_reps)
        if a.exchange_worker is not None:
            exchange_worker(a.exchange_worker, max(2, a.p2p_reps))
        return 0
    sz = QUICK if a.quick else FULL
    if a.reps is not None:
        if a.reps < 1:
            ap.error(f"--reps: must be at least 1, got {a.reps}")
        sz = replace(sz, reps=a.reps)
    elif a.replay is not None and (Path(a.replay) / "bench_network.json").is_file():
        done = json.loads((Path(a.replay) / "bench_network.json").read_text())
        sz = replace(sz, reps=int(done.get("sizes", {}).get("reps", sz.reps)))
    cal_path = Path(a.calibration)
    prior = (json.loads(cal_path.read_text()).get("network") if cal_path.exists() else None)
    if a.replay is not None:
        bench = Bench(sz, Path(a.replay).resolve(), Path(a.replay).resolve(), replay=True,
                      prior=prior)
        result = bench.run()
        print(json.dumps(result))
        return 0 if result["all_verified"] else 1
    from mpi_coded.cluster import manage

    why = manage.missing_privilege()
    if why:
        print(f"bench_network: no emulated cluster here: {why}", file=sys.stderr)
        return 2

    def on_term(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: then the teardown runs
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    keep = a.out is not None
    out = Path(a.out) if keep else Path(tempfile.mkdtemp(prefix="t19c-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="t19c-state-"))
    try:
        bench = Bench(sz, out.resolve(), base, prior=prior)
        result = bench.run()
        if not a.no_write_calibration:
            result["calibration_file"] = str(a.calibration)
            write_link_calibration(Path(a.calibration), link_section(bench.cal, bench.fits))
        (out / "bench_network.json").write_text(json.dumps(result) + "\n")
    except Failed as exc:
        print(f"bench_network: {exc}", file=sys.stderr)
        return 1
    finally:
        import shutil

        left = sorted(base.glob("cluster-*/cluster.json"))
        if left:  # a teardown failed: keep its state, say how to finish it
            for f in left:
                print(f"bench_network: still up: mpi-coded cluster down --name "
                      f"{f.parent.name.removeprefix('cluster-')} --dir {f.parent}",
                      file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)
        if not keep:
            shutil.rmtree(out, ignore_errors=True)
    print(json.dumps(result))
    return 0 if result["all_verified"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
