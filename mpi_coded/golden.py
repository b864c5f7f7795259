"""The deterministic part of a job's result lines: the rules ``scripts/make_golden.py`` pins
the golden outputs with and ``tests/test_golden_outputs.py`` compares them by.

A result line holds what the job computed (plans, loads, decoded values' checks: the same
on every run) beside what it measured (seconds, hosts, versions) and what the scheduler
decided (who finished first).  :func:`rule_paths` finds the measured keys by fixed rules
(:data:`DROP_KEYS`, keys ending in ``_s`` except :data:`KEEP_S`), :func:`diff_paths` the
keys two runs disagree on, :func:`order_is_fixed` whether the straggler draws, not the
scheduler, decided a coded job's finishing order, and :func:`drop_paths` removes them.
:func:`golden_records` puts the rules together for the runs of one job.  Paths are lists
of keys, ``"*"`` for any key (digit keys, the per-server and per-machine ones, are written
as ``"*"``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from mpi_coded.results import ALL_VERIFIED, RUN, VERIFIED, kind_of

KEEP_S = {"predicted_s", "predicted_planned_s", "total_predicted_s", "target_s", "timeout_s",
          "deadline_slack_s"}
"""Keys ending in ``_s`` that are plan or config values, not seconds the job measured."""
DROP_KEYS = {"host", "hosts", "python", "platform", "numpy", "mpi_coded", "mpi", "versions",
             "timestamp", "pid", "pids", "rss", "max_rss", "cpu_fraction",
             "max_wall_over_predicted", "overhead_ms_per_step"}
"""The machine, the versions and measured ratios."""
DROP_MAP_PROGRESS = (("server_map", "*", "rows_done"), ("server_map", "*", "stopped"))
"""A coded job's map progress of servers told to stop: depends on when the stop arrived."""
ORDER_KEYS = ("Q", "extra", "finishing_order")
"""A coded job's finishing order."""
ORDER_DEPENDENT = ("multicast_values", "unicast_values", "load_measured",
                   "load_measured_exact", "load_plan_exact", "padding_values", "strategy",
                   "s_q", "bytes_on_wire")
"""A coded job's shuffle sizes where its load depends on which servers finished (kept only
with a fixed finishing order)."""

Path_ = tuple[str, ...]


def drop_paths(obj: Any, patterns: list[list[str]]) -> Any:
    """``obj`` without the keys at ``patterns`` (lists of keys, ``"*"`` any key)."""
    if not isinstance(obj, dict):
        return obj
    out = {}
    for k, v in obj.items():
        tails = [p[1:] for p in patterns if p and p[0] in ("*", k)]
        if any(not t for t in tails):
            continue
        out[k] = drop_paths(v, tails) if tails else v
    return out


def _generic(path: Path_) -> list[str]:
    """``path`` with its digit keys as ``"*"``."""
    return ["*" if re.fullmatch(r"\d+", k) else k for k in path]


def rule_paths(obj: Any, path: Path_ = ()) -> set[Path_]:
    """Paths (digit keys as ``*``) the fixed rules drop."""
    found: set[Path_] = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            p = (*path, k)
            if k in DROP_KEYS or (k.endswith("_s") and k not in KEEP_S):
                found.add(tuple(_generic(p)))
            else:
                found |= rule_paths(v, p)
    return found


def diff_paths(a: Any, b: Any, path: Path_ = ()) -> set[Path_]:
    """Leaf paths (digit keys as ``*``) where ``a`` and ``b`` differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        found: set[Path_] = set()
        for k in set(a) | set(b):
            if k not in a or k not in b:
                found.add(tuple(_generic((*path, k))))
            else:
                found |= diff_paths(a[k], b[k], (*path, k))
        return found
    return set() if a == b else {tuple(_generic(path))}


def order_is_fixed(records: Sequence[dict[str, Any]], margin: float) -> bool:
    """Every run record's finishers are decided by straggler draws (the ``target_s`` of
    each server's map) at least ``margin`` s apart."""
    for rec in records:
        if kind_of(rec) != RUN:
            continue
        targets = sorted(v["target_s"] for v in rec["server_map"].values())
        used = len(rec["Q"]) + len(rec["extra"]) + 1
        gaps = [b - a for a, b in zip(targets[:used], targets[1:used])]
        if not gaps or min(gaps) < margin:
            return False
    return True


def unverified(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lines that say the result did not verify (a step, run or summary line)."""
    return [x for x in records if x.get(VERIFIED) is False or x.get(ALL_VERIFIED) is False]


def golden_records(runs: Sequence[Sequence[dict[str, Any]]], coded: bool, margin: float,
                   order_free: bool) -> tuple[list[list[str]], list[dict[str, Any]], list[str]]:
    """The golden form of a job run several times (``runs``: each run's lines): the paths
    to drop, the first run's lines without them and notes on what was dropped and why.

    Dropped: what :func:`rule_paths` finds; for a ``coded`` job also the map progress, and
    the finishing order when the draws of some run are closer than ``margin``
    (:func:`order_is_fixed`), with the shuffle sizes too unless the scheme's load does
    not depend on the finishers (``order_free``); then every path the runs disagree on.
    ValueError if the runs wrote different numbers of lines."""
    drop: set[Path_] = set()
    for rec in runs[0]:
        drop |= rule_paths(rec)
    notes = []
    if coded:
        drop |= set(DROP_MAP_PROGRESS)
        if not all(order_is_fixed(recs, margin) for recs in runs):
            drop |= {(k,) for k in ORDER_KEYS}
            notes.append(f"finishing order not fixed by the draws (< {margin} s apart): Q, "
                         "extra, finishing_order dropped")
            if not order_free:
                drop |= {(k,) for k in ORDER_DEPENDENT}
    patterns = [list(p) for p in sorted(drop)]
    filtered = [[drop_paths(x, patterns) for x in recs] for recs in runs]
    extra: set[Path_] = set()
    for other in filtered[1:]:
        if len(other) != len(filtered[0]):
            raise ValueError("runs wrote different numbers of lines")
        for a, b in zip(filtered[0], other):
            extra |= diff_paths(a, b)
    if extra:
        notes.append("differed between runs, dropped: "
                     + ", ".join(".".join(p) for p in sorted(extra)))
        patterns = [list(p) for p in sorted(drop | extra)]
    return patterns, [drop_paths(x, patterns) for x in runs[0]], notes
