"""Solvers for the BDC assignment matrix ``P`` (docs/theory.md (B.4); the BDC paper, Sec. V,
eq. (7)).

All minimise (or, for the heuristic and random solvers, just report) the average
load ``L(P)`` of :mod:`mpi_coded.analysis.bdc_load` (strategy ``"best"`` per ``Q``,
as the runtime sends; ``strategy=1`` or ``2`` fixes one).  Each returns a
:class:`Solution`: ``P``, its load and ``servers_needed``, the mean number of
finishers the map phase waits for (:func:`bdc_load.servers_needed_pmf`).

* ``heuristic``: :func:`mpi_coded.coded.assignment.heuristic_assignment` (docs/theory.md (B.4)).
* ``random``: the ``r`` coded rows' partition labels (``r/T`` of each) in a
  seeded random order, cut into batches of ``eta_b``: a uniformly random
  sequence, hence a valid ``P``.
* ``bnb``: exact branch-and-bound, small instances only (every ``Q``
  enumerated, ``C(K, mu q) T <= BNB_MAX_CELLS`` cells).  Cells are filled column
  by column; the bound sets every open cell to its largest feasible value, a
  valid lower bound because the load never increases when an entry grows;
  columns are kept in non-increasing lexicographic order (the load and the
  constraints are symmetric under permuting partitions); the heuristic is the
  first incumbent.
* ``hybrid``: starts from the heuristic (or a given ``P``) and repeatedly
  de-assigns a window of a few cells (``rows`` random batches x ``cols``
  random partitions among those the batches hold rows of, from a seeded
  generator), re-optimises it exactly (every refilling) with its row
  and column sums fixed (so ``P`` stays valid), and keeps the result only if the
  load drops: never worse than its start.

``save_assignment`` / ``load_assignment`` store ``P`` as ``.npy``, the format
``mpi-coded run coded --assignment P.npy`` reads.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from mpi_coded.analysis.bdc_load import (
    EXACT_LIMIT,
    SAMPLES,
    LoadEvaluator,
    check_P,
    finishing_sets,
    mean_servers_needed,
    servers_needed_pmf,
)
from mpi_coded.coded.assignment import heuristic_assignment
from mpi_coded.coded.params import CodedParams
from mpi_coded.errors import ConfigError, require

SOLVERS = ("heuristic", "random", "bnb", "hybrid")
BNB_MAX_CELLS = 64
"""Largest ``C(K, mu q) * T`` the exact solver accepts."""
BNB_NODE_LIMIT = 500_000
MAX_WINDOW_CANDIDATES = 2000
"""The hybrid solver skips windows with more refillings than this."""


@dataclass(frozen=True, eq=False)
class Solution:
    """An assignment, its average load (exact fraction) and mean servers needed."""

    solver: str
    P: np.ndarray
    load: Fraction
    servers_needed: float
    exact: bool  # load averaged over every Q (else over seeded samples)
    nodes: int = 0  # bnb: search nodes; hybrid: windows tried

    def to_dict(self) -> dict[str, Any]:
        """The ``solve --json`` object."""
        return {"solver": self.solver, "load": float(self.load),
                "servers_needed": self.servers_needed}


def _solution(inst: CodedParams, solver: str, P: np.ndarray, ev: LoadEvaluator, exact: bool,
              nodes: int = 0, seed: int = 0) -> Solution:
    pmf, _ = servers_needed_pmf(inst, P, seed=seed)
    return Solution(solver, np.asarray(P, dtype=np.int64), ev.load(P),
                    mean_servers_needed(pmf), exact, nodes)


def _evaluator(inst: CodedParams, strategy: int | str, exact_limit: int, samples: int,
               seed: int) -> tuple[LoadEvaluator, bool]:
    Qs, exact = finishing_sets(inst, exact_limit, samples, seed)
    return LoadEvaluator(inst, Qs, strategy), exact


def heuristic(inst: CodedParams, strategy: int | str = "best", exact_limit: int = EXACT_LIMIT,
              samples: int = SAMPLES, seed: int = 0) -> Solution:
    """The heuristic ``P`` of docs/theory.md (B.4) with its load."""
    P = heuristic_assignment(inst.n_batches, inst.rows_per_batch, inst.T)
    ev, exact = _evaluator(inst, strategy, exact_limit, samples, seed)
    return _solution(inst, "heuristic", P, ev, exact, seed=seed)


def random_assignment(inst: CodedParams, rng: np.random.Generator) -> np.ndarray:
    """A random valid ``P``: shuffled partition labels cut into batches."""
    labels = np.repeat(np.arange(inst.T), inst.code_length)
    rng.shuffle(labels)
    batch = np.repeat(np.arange(inst.n_batches), inst.rows_per_batch)
    P = np.zeros((inst.n_batches, inst.T), dtype=np.int64)
    np.add.at(P, (batch, labels), 1)
    return P


def solve_random(inst: CodedParams, seed: int = 0, strategy: int | str = "best",
                 exact_limit: int = EXACT_LIMIT, samples: int = SAMPLES) -> Solution:
    """A seeded random valid ``P`` with its load."""
    P = random_assignment(inst, np.random.default_rng(seed))
    ev, exact = _evaluator(inst, strategy, exact_limit, samples, seed)
    return _solution(inst, "random", P, ev, exact, seed=seed)


class _NodeLimit(Exception):
    pass


def branch_and_bound(inst: CodedParams, strategy: int | str = "best",
                     node_limit: int = BNB_NODE_LIMIT) -> Solution:
    """The exact minimiser of ``L(P)`` (module docstring); small instances only."""
    nb, T = inst.n_batches, inst.T
    require(math.comb(inst.K, inst.q) <= EXACT_LIMIT, "solver",
            f"bnb enumerates every finishing set: C(K, q) must be <= {EXACT_LIMIT} "
            "(use hybrid)", f"C(K, q) = {math.comb(inst.K, inst.q)}")
    require(nb * T <= BNB_MAX_CELLS, "solver",
            f"bnb is exact and only for small instances: C(K, mu q) * T must be <= "
            f"{BNB_MAX_CELLS} (use hybrid)", f"C(K, mu q) * T = {nb * T}")
    ev, _ = _evaluator(inst, strategy, EXACT_LIMIT, SAMPLES, 0)
    best_P = heuristic_assignment(nb, inst.rows_per_batch, T)
    best = [ev.objective(best_P)]
    c = inst.code_length
    P = np.zeros((nb, T), dtype=np.int64)
    row_rem = np.full(nb, inst.rows_per_batch, dtype=np.int64)
    nodes = [0]

    def bound(t: int, b: int, col_rem: int) -> int:
        relaxed = P.copy()
        relaxed[b:, t] = np.minimum(row_rem[b:], col_rem)
        if t + 1 < T:
            relaxed[:, t + 1:] = np.minimum(row_rem, c)[:, None]
        return ev.objective(relaxed)

    def dfs(t: int, b: int, col_rem: int, tight: bool) -> None:
        if b == nb:
            if t + 1 == T:
                value = ev.objective(P)
                if value < best[0]:
                    best[0] = value
                    best_P[:] = P
                return
            dfs(t + 1, 0, c, True)
            return
        nodes[0] += 1
        if nodes[0] > node_limit:
            raise _NodeLimit
        if bound(t, b, col_rem) >= best[0]:
            return
        hi = min(int(row_rem[b]), col_rem)
        lo = max(0, col_rem - int(row_rem[b + 1:].sum()))
        if tight and t > 0:
            hi = min(hi, int(P[b, t - 1]))
        for v in range(hi, lo - 1, -1):
            P[b, t] = v
            row_rem[b] -= v
            dfs(t, b + 1, col_rem - v, tight and t > 0 and v == P[b, t - 1])
            row_rem[b] += v
            P[b, t] = 0

    try:
        dfs(0, 0, c, False)
    except _NodeLimit:
        raise ConfigError("solver", f"bnb gave up after {node_limit} search nodes: the "
                          "instance is too large for the exact solver (use hybrid)") from None
    return _solution(inst, "bnb", best_P, ev, True, nodes[0])


def windows(row_sums: np.ndarray, col_sums: np.ndarray) -> Iterator[np.ndarray]:
    """Every non-negative integer matrix with these row and column sums."""
    d, e = len(row_sums), len(col_sums)
    W = np.zeros((d, e), dtype=np.int64)
    cols = np.array(col_sums, dtype=np.int64)

    def fill(i: int, j: int, row_left: int) -> Iterator[np.ndarray]:
        if i == d - 1:  # the last row is forced by the column sums
            W[i] = cols
            yield W.copy()
            W[i] = 0
            return
        if j == e - 1:
            if row_left <= cols[j]:
                W[i, j] = row_left
                cols[j] -= row_left
                yield from fill(i + 1, 0, int(row_sums[i + 1]))
                cols[j] += row_left
                W[i, j] = 0
            return
        for v in range(min(row_left, int(cols[j])), -1, -1):
            W[i, j] = v
            cols[j] -= v
            yield from fill(i, j + 1, row_left - v)
            cols[j] += v
        W[i, j] = 0

    yield from fill(0, 0, int(row_sums[0]))


class _Window:
    """Incremental ``L(P)`` for window moves: only the window's columns change."""

    def __init__(self, ev: LoadEvaluator, P: np.ndarray) -> None:
        self.ev = ev
        Pf = np.asarray(P, dtype=np.float64)
        self.counts = {s: ev.known[s] @ Pf for s in ev.strategies}
        self.short = {s: np.clip(ev.inst.code_dimension - c, 0, None).sum(axis=1)
                      for s, c in self.counts.items()}

    def objectives(self, R: np.ndarray, C: np.ndarray, deltas: np.ndarray) -> np.ndarray:
        """The objective after adding each ``deltas[i]`` (``d x e``) to ``P[R][:, C]``."""
        ev, k = self.ev, self.ev.inst.code_dimension
        n_q, q = len(ev.Qs), ev.inst.q
        vals = []
        for s in ev.strategies:
            old = self.counts[s][:, C]
            new = old[None] + np.einsum("nr,crd->cnd", ev.known[s][:, R], deltas)
            short = (self.short[s][None] - np.clip(k - old, 0, None).sum(axis=1)[None]
                     + np.clip(k - new, 0, None).sum(axis=2))
            per_q = np.rint(short.reshape(len(deltas), n_q, q).sum(axis=2)).astype(np.int64)
            vals.append(ev.mc[s] + ev.scale * per_q)
        return np.asarray(np.minimum.reduce(vals).sum(axis=1))

    def apply(self, R: np.ndarray, C: np.ndarray, delta: np.ndarray) -> None:
        for s in self.ev.strategies:
            self.counts[s][:, C] += self.ev.known[s][:, R] @ delta
            k = self.ev.inst.code_dimension
            self.short[s] = np.clip(k - self.counts[s], 0, None).sum(axis=1)


def hybrid(inst: CodedParams, start: np.ndarray | None = None, seed: int = 0,
           iterations: int = 200, rows: int = 2, cols: int = 3, strategy: int | str = "best",
           exact_limit: int = EXACT_LIMIT, samples: int = SAMPLES) -> Solution:
    """Window re-optimisation from the heuristic (or ``start``); never worse than the start."""
    require(iterations >= 0, "iterations", "must be >= 0", iterations)
    require(rows >= 2 and cols >= 2, "window", "needs at least 2 rows and 2 columns",
            (rows, cols))
    ev, exact = _evaluator(inst, strategy, exact_limit, samples, seed)
    if start is None:
        P = heuristic_assignment(inst.n_batches, inst.rows_per_batch, inst.T)
    else:
        P = check_P(inst, start).copy()
    current = ev.objective(P)
    state = _Window(ev, P)
    d, e = min(rows, inst.n_batches), min(cols, inst.T)
    rng = np.random.default_rng(seed)
    tried = 0
    if d >= 2 and e >= 2:
        for _ in range(iterations):
            R = np.sort(rng.choice(inst.n_batches, d, replace=False))
            busy = np.flatnonzero(P[R].sum(axis=0))  # columns the window can move rows of
            pool = busy if len(busy) >= e else np.arange(inst.T)
            C = np.sort(rng.choice(pool, e, replace=False))
            W = P[np.ix_(R, C)]
            cands = []
            for cand in windows(W.sum(axis=1), W.sum(axis=0)):
                cands.append(cand)
                if len(cands) > MAX_WINDOW_CANDIDATES:
                    break
            if len(cands) <= 1 or len(cands) > MAX_WINDOW_CANDIDATES:
                continue
            tried += 1
            deltas = np.stack(cands).astype(np.float64) - W[None]
            values = state.objectives(R, C, deltas)
            i = int(np.argmin(values))
            if values[i] < current:
                P[np.ix_(R, C)] = cands[i]
                state.apply(R, C, deltas[i])
                current = int(values[i])
    assert current == ev.objective(P), "incremental and full evaluation disagree"
    return _solution(inst, "hybrid", P, ev, exact, tried, seed)


def solve(inst: CodedParams, solver: str, seed: int = 0, strategy: int | str = "best",
          iterations: int = 200) -> Solution:
    """Dispatch to one of :data:`SOLVERS`."""
    require(solver in SOLVERS, "solver", f"must be one of {', '.join(SOLVERS)}", solver)
    if solver == "heuristic":
        return heuristic(inst, strategy, seed=seed)
    if solver == "random":
        return solve_random(inst, seed, strategy)
    if solver == "bnb":
        return branch_and_bound(inst, strategy)
    return hybrid(inst, seed=seed, iterations=iterations, strategy=strategy)


def save_assignment(path: str | Path, P: np.ndarray) -> None:
    """Write ``P`` as an int64 ``.npy`` file."""
    np.save(Path(path), np.asarray(P, dtype=np.int64), allow_pickle=False)


def load_assignment(path: str | Path, inst: CodedParams | None = None) -> np.ndarray:
    """Read a saved ``P`` (checked against ``inst`` when given)."""
    try:
        P = np.load(Path(path), allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ConfigError("assignment", f"cannot read an .npy matrix: {exc}", str(path)) from None
    require(P.ndim == 2 and P.dtype.kind in "iu", "assignment",
            "must be a 2-D integer matrix", f"{P.dtype} {P.shape}")
    return check_P(inst, P) if inst is not None else np.asarray(P, dtype=np.int64)
