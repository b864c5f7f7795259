"""The sections of a report: one per elastic job, coded job and sweep, and the run records.

Each returns HTML (:mod:`.html`) with its figures drawn by :mod:`mpi_coded.plotting` and
embedded as ``data:`` URIs, and the problems it found (failed or unverified steps,
repetitions and runs), which the page lists at its top.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import mpi_coded.report.html as H
from mpi_coded import plotting
from mpi_coded.report.sources import Source
from mpi_coded.results import (
    ALL_VERIFIED,
    CONFIG,
    RUN_FAILED,
    CodedJobLines,
    ElasticJob,
    RunContext,
    RunFailed,
    SweepRun,
    kind_of,
)

Model = Callable[[CodedJobLines], tuple[dict[str, Any] | None, str]]
"""The calibrated model of a coded job: ``(seconds per phase or None, a note)``."""


@dataclasses.dataclass
class Section:
    anchor: str
    title: str
    html: str
    problems: list[str] = dataclasses.field(default_factory=list)
    figures: int = 0


def _fig(draw: Callable[[Any], None], alt: str, caption: str, width: float = 7.0,
         height: float = 3.4) -> str:
    fig, ax = plotting.figure(width, height)
    draw(ax)
    return H.img(plotting.data_uri(fig), alt, caption)


# ------------------------------------------------------------------------------------------
# the elastic job

STEP_COLUMNS = [("step", "step"), ("verified", "verified"), ("available", "available"),
                ("preempted", "preempted"),
                ("predicted_s", "predicted s"), ("wall_s", "measured s"),
                ("ratio", "measured / predicted"), ("transition_waste", "waste"),
                ("suspects", "suspects"), ("late", "late"), ("replanned", "replanned"),
                ("attempts", "attempts"), ("estimates", "speed estimates"),
                ("max_error", "max error"), ("wrong", "wrong answers of"),
                ("quarantined", "quarantined")]

QUARANTINE_COLUMNS = [("step", "step"), ("machine", "machine"), ("host", "host"),
                      ("event", "event"), ("check_s", "block check s"),
                      ("repair_s", "repair s"), ("bytes", "bytes rebuilt")]
"""The quarantine events of a job (docs/theory.md A.10), one row each."""

SUMMARY_COLUMNS = [("steps", "steps"), ("total_predicted_s", "predicted s"),
                   ("total_wall_s", "measured s"),
                   ("max_wall_over_predicted", "worst measured / predicted"),
                   ("total_transition_waste", "total waste"), ("setup_s", "setup s"),
                   ("late_answers_dropped", "late answers dropped"),
                   ("decoder_cache", "decoder cache"), ("workload", "workload check"),
                   ("all_verified", "all verified")]


def elastic_section(src: Source, i: int, job: ElasticJob) -> Section:
    c = job.config
    anchor = f"{_slug(src)}-cec-{i}"
    title = (f"{src.name}: elastic job {i + 1}: policy {c.policy}, N={c.N} L={c.L}, "
             f"{c.field}, workload {c.workload or 'independent'}")
    rows, bad = [], []
    for s in job.steps:
        rows.append({**s.fields_dict(), "ratio": s.wall_s / s.predicted_s
                     if s.predicted_s > 0 else None,
                     "estimates": _estimates(s.speed_estimates),
                     "wrong": sorted({a["machine"] for a in s.wrong_answers}) or ""})
        bad.append(not s.verified)
    problems = [f"{title}: step {s.step} did not verify" for s in job.steps if not s.verified]
    summ = job.summary
    if summ is None:
        problems.append(f"{title}: no summary line (the job did not finish)")
    elif not summ.all_verified and not problems:
        problems.append(f"{title}: the summary says not all steps verified")
    parts = [f'<h3 id="{anchor}">{H.esc(title)}</h3>',
             H.verdict(not problems, "every step verified" if not problems else
                       "; ".join(p.split(": ", 2)[-1] for p in problems)),
             H.note(f"speeds {H.fmt(c.speeds)}, rows {c.rows}, cols {c.cols}, t_row {c.t_row} "
                    f"s, availability {c.availability_kind}, seed {c.seed}"),
             H.fold(H.table(STEP_COLUMNS, rows, "cec-step", bad), len(rows), "steps")]
    if summ is not None:
        srow = {**summ.fields_dict(), "workload": (summ.workload_check or {}).get("ok")}
        parts.append(H.table(SUMMARY_COLUMNS, [srow], "cec-summary",
                             [not summ.all_verified]))
    parts += _quarantine(
        QUARANTINE_COLUMNS, [{"step": s.step, **e} for s in job.steps for e in s.quarantine],
        "cec-quarantine", f"{sum(len(s.wrong_answers) for s in job.steps)} wrong answers "
        "located; machines caught answering wrong, their blocks checked (and rebuilt), "
        "re-admitted or lost (docs/theory.md A.10):")
    figs = 0
    if job.steps:
        steps = [s.step for s in job.steps]
        color = plotting.POLICY_COLORS.get(c.policy)
        parts.append(_fig(lambda ax: _steps(ax, job, color), "elastic step times",
                          "Each step's time: the plan's prediction (line) and the measured "
                          "wall time (point); a cross marks a step that did not verify."))
        waste = [H.as_float(s.transition_waste) for s in job.steps]
        parts.append(_fig(lambda ax: plotting.bars(ax, [str(t) for t in steps], waste,
                                                   "transition waste (fraction of a block)",
                                                   [not s.verified for s in job.steps]),
                          "transition waste", "Transition waste per step (rows that change "
                          "machine, over a block).", height=2.6))
        figs = 2
        est = [s for s in job.steps if s.speed_estimates]
        if est:
            parts.append(_fig(lambda ax: _estimate_lines(ax, job), "speed estimates",
                              "Speed estimates per machine after each step (dashed: the "
                              "configured speed)."))
            figs += 1
    return Section(anchor, title, "\n".join(parts), problems, figs)


def _quarantine(columns: list[tuple[str, str]], events: list[dict[str, Any]], kind: str,
                note: str) -> list[str]:
    """A job's quarantine events (a lost one marked), under ``note``; none: nothing."""
    if not events:
        return []
    return [H.note(note), H.fold(H.table(columns, events, kind,
                                         [e["event"] == "lost" for e in events]),
                                 len(events), "quarantine events")]


def _estimates(est: dict[str, float] | None) -> str:
    return " ".join(f"{k}:{v:.3g}" for k, v in (est or {}).items())


def _steps(ax: Any, job: ElasticJob, color: Any) -> None:
    steps = [s.step for s in job.steps]
    plotting.step_chart(ax, steps, [s.predicted_s for s in job.steps],
                        [s.wall_s for s in job.steps], label=job.config.policy, color=color,
                        bad=[not s.verified for s in job.steps])
    if len(steps) <= plotting.MANY:
        ax.set_xticks(steps)
    ax.set_xlabel("step")
    ax.set_ylabel("step time (s)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)


def _estimate_lines(ax: Any, job: ElasticJob) -> None:
    machines = sorted({k for s in job.steps for k in (s.speed_estimates or {})}, key=int)
    for m in machines:
        xs = [s.step for s in job.steps if s.speed_estimates and m in s.speed_estimates]
        ys = [float((s.speed_estimates or {})[m]) for s in job.steps
              if s.speed_estimates and m in s.speed_estimates]
        line = ax.plot(xs, ys, "o-", label=f"machine {m}")[0]
        speeds = job.config.speeds
        if int(m) - 1 < len(speeds):
            ax.axhline(H.as_float(speeds[int(m) - 1]), color=line.get_color(), ls="--",
                       lw=0.8)
    ax.set_xlabel("step")
    ax.set_ylabel("speed")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)


# ------------------------------------------------------------------------------------------
# the coded job

RUN_COLUMNS = [("rep", "rep"), ("verified", "verified"), ("Q", "Q"), ("extra", "extra"),
               ("encode_s", "encode s"),
               ("map_s", "map s"), ("shuffle_s", "shuffle s"), ("reduce_s", "reduce s"),
               ("total_s", "total s"), ("load_measured", "load measured"),
               ("load_analytic", "load analytic"), ("load_measured_exact", "load (exact)"),
               ("encoder", "encoder"), ("decoder", "decoder"), ("verify", "check"),
               ("max_error", "max error"), ("max_peak_rss_mb", "peak RSS MiB"),
               ("unresponsive", "unresponsive"), ("wrong", "wrong answers of"),
               ("rerun", "attempts run again"), ("quarantined", "quarantined")]

SERVER_EVENT_COLUMNS = [("rep", "rep"), ("server", "server"), ("rank", "rank"),
                        ("host", "host"), ("event", "event")]
"""The quarantine events of a coded job (docs/coded.md "A server that answers wrong")."""


def coded_section(src: Source, i: int, job: CodedJobLines, model: Model | None) -> Section:
    c = job.config
    anchor = f"{_slug(src)}-coded-{i}"
    title = (f"{src.name}: coded job {i + 1}: {c.scheme}, K={c.K} q={c.q} mu={c.mu} m={c.m} "
             f"n={c.n} N={c.N} T={c.T}, {c.field}")
    problems = [f"{title}: repetition {r.rep} did not verify"
                + (f" ({r.load_check})" if r.load_check else "") for r in job.runs
                if not r.verified]
    if job.summary is None:
        problems.append(f"{title}: no summary line (the job did not finish)")
    elif job.summary.ended_early:
        problems.append(f"{title}: ended early: {job.summary.ended_early}")
    abandoned = job.summary.abandoned if job.summary is not None else []
    if len(job.runs) + len(abandoned) < c.reps:
        problems.append(f"{title}: {len(job.runs)} of {c.reps} repetitions written")
    predicted, why = model(job) if model is not None else (None, "")
    rows: list[dict[str, Any]] = [
        {**r.fields_dict(), "wrong": sorted({w["server"] for w in r.wrong_answers or []})
         or ""} for r in job.runs]
    bad = [not r.verified for r in job.runs]
    classes = ["bad" if b else "" for b in bad]
    if predicted is not None:
        rows.append({"rep": "model", **{f"{ph}_s": predicted.get(ph)
                                        for ph in ("encode", "map", "reduce", "total")},
                     "encoder": predicted.get("encoder"),
                     "decoder": predicted.get("decoder")})
        classes.append("model")
    used = sorted({r.decoder for r in job.runs if r.decoder})
    parts = [f'<h3 id="{anchor}">{H.esc(title)}</h3>',
             H.verdict(not problems, f"every repetition verified ({len(job.runs)})"
                       if not problems else "; ".join(p.split(": ", 2)[-1] for p in problems)),
             H.note(f"straggler model {c.straggler or 'none'}, t_row {c.t_row} s, seed "
                    f"{c.seed}, multicast {c.multicast or 'p2p'}, wait for {c.wait_for} of "
                    f"{c.K} servers, r={c.r} coded rows; decoders used: "
                    f"{', '.join(used) or 'none'}"
                    + (f"; repetitions abandoned (a server died in them): "
                       f"{', '.join(map(str, abandoned))}" if abandoned else "")),
             H.fold(H.table(RUN_COLUMNS, rows, "coded-run", bad, classes), len(job.runs),
                    "repetitions")]
    if why:
        parts.append(H.note(why))
    parts += _quarantine(
        SERVER_EVENT_COLUMNS,
        [{"rep": r.rep, **e} for r in job.runs for e in r.quarantine or []],
        "coded-quarantine", f"{sum(len(r.wrong_answers or []) for r in job.runs)} wrong map "
        "outputs or payloads named; servers caught answering wrong, left out of later "
        "repetitions, re-admitted or lost (docs/coded.md, \"A server that answers wrong\"):")
    figs = 0
    if job.runs:
        labels = [f"rep {r.rep}" for r in job.runs]
        measured = {ph: [r.phase_s(ph) for r in job.runs] for ph in plotting.PHASES}
        parts.append(_fig(lambda ax: plotting.phase_chart(
            ax, labels, measured, predicted, bad, model_label="calibrated\nmodel"),
            "coded phases", "Seconds per phase of every repetition"
            + (" and the calibrated model (hatched; it has no shuffle term)"
               if predicted is not None else "") + "; (!) marks a repetition that did not "
            "verify."))
        parts.append(_fig(lambda ax: plotting.load_chart(
            ax, labels, [r.load_measured for r in job.runs],
            [r.load_analytic for r in job.runs], bad), "coded loads",
            "Communication load of every repetition: measured (bars) and analytic (marks).",
            height=2.8))
        figs = 2
    return Section(anchor, title, "\n".join(parts), problems, figs)


# ------------------------------------------------------------------------------------------
# sweeps


def sweep_section(src: Source, sweep_id: str, runs: list[SweepRun]) -> Section:
    anchor = f"{_slug(src)}-sweep-{_slug_text(sweep_id)}"
    title = f"{src.name}: sweep {sweep_id} ({len(runs)} runs)"
    keys = list(dict.fromkeys(k for r in runs for k in r.params))
    rows, bad, problems = [], [], []
    for r in runs:
        s = r.summary or {}
        fail = RunFailed.from_record(r.lines[-1]) if r.failed and \
            kind_of(r.lines[-1]) == RUN_FAILED else None
        reason = fail.reason if fail else ("" if r.failed else None)
        ok = not r.failed and s.get(ALL_VERIFIED) is True
        rows.append({"run": r.run, "rep": r.rep, **{f"p:{k}": r.params.get(k) for k in keys},
                     "steps": s.get("steps"), "total_predicted_s": s.get("total_predicted_s"),
                     "total_wall_s": s.get("total_wall_s"), "all_verified": s.get(
                         ALL_VERIFIED), "failed": reason})
        bad.append(not ok)
        if not ok:
            problems.append(f"{title}: run {r.run} rep {r.rep} "
                            f"({', '.join(f'{k}={H.fmt(v)}' for k, v in r.params.items())}) "
                            + (f"failed: {reason}" if r.failed else "did not verify"))
    columns = [("run", "run"), ("rep", "rep"), *[(f"p:{k}", k) for k in keys],
               ("steps", "steps"), ("total_predicted_s", "predicted s"),
               ("total_wall_s", "measured s"), ("all_verified", "all verified"),
               ("failed", "failed")]
    parts = [f'<h3 id="{anchor}">{H.esc(title)}</h3>',
             H.verdict(not problems, "every run succeeded and verified" if not problems
                       else f"{len(problems)} run(s) failed or did not verify"),
             H.fold(H.table(columns, rows, "sweep-run", bad), len(rows), "runs")]
    figs = 0
    for key in _varying(runs, keys):
        series = _series(runs, key, keys)
        if series:
            parts.append(_fig(_sweep_drawer(key, series), f"sweep over {key}",
                f"Total wall time against {key}: median over repetitions, bars min to max; "
                "one line per combination of the other swept parameters."))
            figs += 1
    return Section(anchor, title, "\n".join(parts), problems, figs)


def _sweep_drawer(key: str, series: dict[str, list[tuple[Any, list[float]]]]
                  ) -> Callable[[Any], None]:
    return lambda ax: plotting.sweep_chart(ax, key, series, "total wall time (s)")


def _varying(runs: list[SweepRun], keys: list[str]) -> list[str]:
    return [k for k in keys if len({H.fmt(r.params.get(k)) for r in runs}) > 1]


def _series(runs: list[SweepRun], key: str, keys: list[str]
            ) -> dict[str, list[tuple[Any, list[float]]]]:
    others = [k for k in _varying(runs, keys) if k != key]
    acc: dict[str, dict[str, tuple[Any, list[float]]]] = {}
    for r in runs:
        s = r.summary or {}
        v = s.get("total_wall_s")
        if r.failed or not isinstance(v, (int, float)):
            continue
        name = " ".join(f"{k}={H.fmt(r.params.get(k))}" for k in others)
        x = r.params.get(key)
        x = x if isinstance(x, (int, float)) and not isinstance(x, bool) else H.fmt(x)
        acc.setdefault(name, {}).setdefault(H.fmt(x), (x, []))[1].append(float(v))
    return {name: list(pts.values()) for name, pts in acc.items()}


# ------------------------------------------------------------------------------------------
# the run records

RECORD_COLUMNS = [("file", "file"), ("job", "job"), ("host", "host"), ("hosts", "hosts"),
                  ("mpi", "MPI library"), ("world_size", "world"),
                  ("ranks_on_node", "ranks on node"), ("cores", "cores"),
                  ("wait_mode", "waiting"), ("network", "network"), ("python", "python"),
                  ("numpy", "numpy"), ("mpi_coded", "mpi_coded"), ("platform", "platform")]
EXTRA_KEYS = ("network", "slurm", "via")
"""Keys some config lines carry beyond :class:`RunContext` (an emulated cluster's links,
a sweep's SLURM job and launcher), shown when present."""


def records_section(sources: list[Source]) -> Section:
    rows = []
    for src in sources:
        for i, ej in enumerate(src.elastic):
            setup = src.setups[i] if i < len(src.setups) else None
            hosts = ",".join(sorted(set(setup.hosts.values()))) if setup else ""
            rows.append(_record_row(src, f"elastic {i + 1}", ej.config.run, ej.config.raw,
                                    hosts))
        for i, cj in enumerate(src.coded):
            rows.append(_record_row(src, f"coded {i + 1}", cj.config.run, cj.config.raw, ""))
        for sid, runs in src.sweeps.items():
            for r in runs:
                cfg = next((x for x in r.lines if kind_of(x) == CONFIG), r.lines[0])
                rows.append(_record_row(src, f"sweep {sid} run {r.run} rep {r.rep}",
                                        RunContext.take(cfg), cfg, ""))
    body = H.table(RECORD_COLUMNS, rows, "records") if rows else H.note("no config lines")
    return Section("records", "Run records", '<h2 id="records">Run records</h2>\n'
                   + H.note("Where and with what every job ran (its config line).") + body)


def _record_row(src: Source, job: str, run: RunContext | None, raw: dict[str, Any],
                hosts: str) -> dict[str, Any]:
    row: dict[str, Any] = {"file": src.name, "job": job, "hosts": hosts}
    if run is not None:
        row.update(run.fields_dict())
    for k in EXTRA_KEYS:
        if k in raw:
            row[k] = raw[k]
    net = row.get("network")
    if not (isinstance(net, dict) and net.get("emulated")) and "slurm" in row:
        row["network"] = f"slurm {H.fmt(row['slurm'])}"
    return row


# ------------------------------------------------------------------------------------------


def _slug_text(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text).strip("-") or "x"


def _slug(src: Source) -> str:
    return _slug_text(src.path.name)

