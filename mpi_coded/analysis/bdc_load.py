"""The BDC communication load of a given assignment ``P`` (docs/theory.md (B.3), (B.4);
the BDC paper, eqs. (4)-(6)).

For a finishing set ``Q`` (``q`` reducers) and reducer ``k`` in ``Q``, ``k``
knows after the multicast phase the batches it stores and the batches delivered
to it: those whose label misses ``k`` and meets ``Q`` in ``j`` servers for a
multicast level ``j`` (``mu q .. s_q``, plus ``s_q - 1`` under strategy 2).  The
vector ``u_Q^(k)`` of eq. (5) is the sum of those rows of ``P``; partition ``t``
still lacks ``max(0, m/T - u_t)`` values per output, all unicast.  With
``U_Q = sum_k sum_t max(0, m/T - (u_Q^(k))_t)`` the load for ``Q`` is
``(MC_s + U_Q) / (m q)`` (in values per output; ``MC_s`` the multicast of
strategy ``s``, independent of ``P``), and ``L(P)`` its average over all ``Q``
(equally likely, eq. (6)).

This is exactly what :func:`mpi_coded.coded.shuffle.shuffle_plan` sends (its
unicast count is the deficit above), computed by counting instead of building
every plan: a matrix product per evaluation, fast enough for the solvers.
Like the runtime, strategy ``"best"`` takes per ``Q`` the cheaper of the two
strategies.  Without ``N`` the multicast is the paper's ``sum B_j / j``; with
``N`` it is the padded length the runtime sends (``ceil(v / j)`` per message),
so the result equals :func:`mpi_coded.coded.shuffle.average_load`.

Averages over ``Q`` are exact (all ``C(K, q)`` sets) when there are at most
``exact_limit`` of them, else over ``samples`` seeded random sets.
:func:`servers_needed_pmf` gives the distribution of the number of finishers the
map phase waits for under the map-end rule (docs/theory.md (B.2)).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from mpi_coded.analysis.loads import strategy_levels as _levels
from mpi_coded.analysis.loads import unified_load
from mpi_coded.coded.assignment import check_assignment
from mpi_coded.coded.params import CodedParams
from mpi_coded.coded.placement import batch_labels
from mpi_coded.coded.schemes import get
from mpi_coded.coded.schemes.bdc import check_size
from mpi_coded.errors import require

EXACT_LIMIT = 5000
"""Enumerate every finishing set when there are at most this many."""
SAMPLES = 2000
"""Otherwise, average over this many seeded random sets."""
STRATEGIES = ("best", 1, 2)
MAX_CELLS = 20_000_000
"""Largest ``C(K, mu q) * max(T, K)`` (cells of ``P`` and of the batch membership)."""
MAX_EVAL = 25_000_000
"""Largest ``(sets Q) * q * C(K, mu q)`` an evaluator holds (float64 entries)."""


def membership(inst: CodedParams) -> np.ndarray:
    """``(n_batches, K)`` bool: server ``s`` stores batch ``b``."""
    out = np.zeros((inst.n_batches, inst.K), dtype=bool)
    for b, lab in enumerate(batch_labels(inst.K, inst.replication)):
        out[b, list(lab)] = True
    return out


def check_P(inst: CodedParams, P: Any) -> np.ndarray:
    """``P`` checked against the sizes of ``inst`` (:func:`check_assignment`)."""
    return check_assignment(P, inst.n_batches, inst.rows_per_batch, inst.T)


def make_instance(K: Any, q: Any, mu: Any, rows_per_batch: Any, T: Any) -> CodedParams:
    """A bdc storage design (``n = 1``, ``N = q``, float64) with every rule of a runnable
    bdc job, and small enough to hold ``P`` (:func:`~mpi_coded.coded.schemes.bdc.check_size`)."""
    return check_size(get("bdc").params(K, q, mu, rows_per_batch, n=1, N=q, T=T,
                                        field="float64"))


def instance_of(params: CodedParams) -> CodedParams:
    """``params`` checked to be a design with an assignment matrix that fits in memory."""
    require(params.spec.takes_assignment, "scheme",
            "the assignment matrix exists only for bdc", params.scheme)
    return check_size(params)


def strategy_levels(inst: CodedParams) -> dict[int, tuple[int, ...]]:
    """Multicast levels of strategies 1 and 2 (as in :mod:`mpi_coded.coded.shuffle`)."""
    s_q = unified_load(inst.K, inst.q, inst.mu).s_q
    return {s: _levels(inst.replication, s_q, s) for s in (1, 2)}


def multicast_units(inst: CodedParams, strategy: int, N: int | None = None) -> Fraction:
    """Multicast values of a strategy divided by ``w = N/q`` (independent of ``P`` and ``Q``).

    Level ``j``: ``C(q, j+1) (j+1)`` messages of ``v / j`` values,
    ``v = C(K-q, mu q - j) eta_b w``; with ``N`` each is padded to ``ceil(v / j)``.
    """
    total = Fraction(0)
    for j in strategy_levels(inst)[strategy]:
        n_msgs = math.comb(inst.q, j + 1) * (j + 1)
        batches = math.comb(inst.K - inst.q, inst.replication - j)
        if n_msgs == 0 or batches == 0:
            continue
        if N is None:
            total += n_msgs * Fraction(batches * inst.rows_per_batch, j)
        else:
            w = N // inst.q
            total += Fraction(n_msgs * math.ceil(batches * inst.rows_per_batch * w / j), w)
    return total


def finishing_sets(inst: CodedParams, exact_limit: int = EXACT_LIMIT, samples: int = SAMPLES,
                   seed: int = 0) -> tuple[np.ndarray, bool]:
    """``(Qs, exact)``: all ``C(K, q)`` sets (sorted rows) or ``samples`` seeded random ones."""
    require(samples >= 1, "samples", "must be >= 1", samples)
    if math.comb(inst.K, inst.q) <= exact_limit:
        Qs = np.array(list(itertools.combinations(range(inst.K), inst.q)), dtype=np.int64)
        return Qs.reshape(-1, inst.q), True
    rng = np.random.default_rng(seed)
    Qs = np.sort(np.argsort(rng.random((samples, inst.K)), axis=1)[:, :inst.q], axis=1)
    return Qs, False


class LoadEvaluator:
    """Evaluates ``L(P)`` for many ``P`` of one instance over a fixed list of sets ``Q``.

    ``known[s]`` is the ``(n_Q q, n_batches)`` 0/1 matrix of the batches each reducer
    knows after the multicasts of strategy ``s``; ``deficits(P, s)`` gives ``U_Q`` per ``Q``.
    Objectives are exact integers (:meth:`objective`), in units of ``1 / scale`` values.
    """

    def __init__(self, inst: CodedParams, Qs: np.ndarray, strategy: int | str = "best",
                 N: int | None = None) -> None:
        require(strategy in STRATEGIES, "strategy", "must be best, 1 or 2", strategy)
        if N is not None:
            require(N >= 1 and N % inst.q == 0, "N", f"q = {inst.q} must divide N", N)
        size = len(Qs) * inst.q * inst.n_batches
        require(size <= MAX_EVAL, "samples", f"finishing sets * q * C(K, mu q) must be <= "
                f"{MAX_EVAL} to evaluate the load (use fewer samples)", size)
        self.inst = inst
        self.Qs = np.asarray(Qs, dtype=np.int64)
        self.strategy = strategy
        self.strategies = (1, 2) if strategy == "best" else (int(strategy),)
        mem = membership(inst)
        n_q = len(self.Qs)
        qmask = np.zeros((n_q, inst.K), dtype=bool)
        np.put_along_axis(qmask, self.Qs, True, axis=1)
        meet = qmask.astype(np.int64) @ mem.T.astype(np.int64)  # (n_Q, n_batches)
        holds = mem.T[self.Qs]  # (n_Q, q, n_batches): reducer Q[i] stores batch b
        levels = strategy_levels(inst)
        self.known: dict[int, np.ndarray] = {}
        for s in self.strategies:
            delivered = ~holds & np.isin(meet, levels[s])[:, None, :]
            # float64 so that the products run in BLAS; every count is an exact small integer
            self.known[s] = (holds | delivered).reshape(n_q * inst.q, -1).astype(np.float64)
        mc = {s: multicast_units(inst, s, N) for s in self.strategies}
        self.scale = math.lcm(*(f.denominator for f in mc.values()))
        self.mc = {s: int(mc[s] * self.scale) for s in self.strategies}
        self.mc_units = mc

    def deficits(self, P: np.ndarray, strategy: int) -> np.ndarray:
        """``U_Q`` (values per output still unicast) for every ``Q``, under ``strategy``."""
        counts = self.known[strategy] @ np.asarray(P, dtype=np.float64)
        short = np.clip(self.inst.code_dimension - counts, 0, None).sum(axis=1)
        per_q = short.reshape(len(self.Qs), self.inst.q).sum(axis=1)
        return np.asarray(np.rint(per_q), dtype=np.int64)

    def per_set(self, P: np.ndarray) -> np.ndarray:
        """Scaled values sent per ``Q`` under this evaluator's strategy (exact integers)."""
        vals = [self.mc[s] + self.scale * self.deficits(P, s) for s in self.strategies]
        return np.asarray(np.minimum.reduce(vals))

    def objective(self, P: np.ndarray) -> int:
        """Sum over ``Q`` of :meth:`per_set`: minimising it minimises ``L(P)``."""
        return int(self.per_set(P).sum())

    def load_of(self, objective: int) -> Fraction:
        """The average load ``L(P)`` of an :meth:`objective` value."""
        inst = self.inst
        return Fraction(objective, self.scale * len(self.Qs) * inst.m * inst.q)

    def load(self, P: np.ndarray) -> Fraction:
        return self.load_of(self.objective(P))


@dataclass(frozen=True)
class BDCLoad:
    """``L(P)`` of one assignment, per strategy and with the runtime's per-``Q`` choice."""

    load: Fraction  # strategy "best" per Q (what the runtime sends), averaged over Q
    strategy1: Fraction
    strategy2: Fraction
    multicast1: Fraction
    multicast2: Fraction
    unicast1: Fraction  # average unicast part under strategy 1
    unicast2: Fraction
    exact: bool
    n_sets: int

    def to_dict(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Fraction) else v) for k, v in self.__dict__.items()}


def bdc_load(inst: CodedParams, P: Any, N: int | None = None, exact_limit: int = EXACT_LIMIT,
             samples: int = SAMPLES, seed: int = 0) -> BDCLoad:
    """The average BDC load of ``P`` over finishing sets (module docstring)."""
    P = check_P(inst, P)
    Qs, exact = finishing_sets(inst, exact_limit, samples, seed)
    ev = LoadEvaluator(inst, Qs, "best", N)
    norm = len(Qs) * inst.m * inst.q
    d1, d2 = ev.deficits(P, 1), ev.deficits(P, 2)
    uc1, uc2 = Fraction(int(d1.sum()), norm), Fraction(int(d2.sum()), norm)
    mc1 = ev.mc_units[1] / (inst.m * inst.q)
    mc2 = ev.mc_units[2] / (inst.m * inst.q)
    return BDCLoad(load=ev.load(P), strategy1=mc1 + uc1, strategy2=mc2 + uc2,
                   multicast1=mc1, multicast2=mc2, unicast1=uc1, unicast2=uc2,
                   exact=exact, n_sets=len(Qs))


def covers(inst: CodedParams, P: np.ndarray, finished: np.ndarray) -> np.ndarray:
    """For each row of the bool matrix ``finished`` (``(n, K)``): do those servers' batches
    hold ``>= m/T`` rows of every partition (the map-end rule, :func:`mapend.covered`)?"""
    mem = membership(inst).astype(np.int64)
    held = (np.asarray(finished, dtype=np.int64) @ mem.T) > 0
    counts = held.astype(np.int64) @ np.asarray(P, dtype=np.int64)
    return np.asarray(np.all(counts >= inst.code_dimension, axis=1))


def servers_needed_pmf(inst: CodedParams, P: Any, exact_limit: int = 1 << 16,
                       samples: int = SAMPLES, seed: int = 0) -> tuple[dict[int, float], bool]:
    """``({g: P(g)}, exact)``: how many finishers the map phase waits for (docs/theory.md (B.2)).

    ``g`` is the first ``g >= q`` whose first ``g`` finishers cover every partition.
    Finishing orders are uniformly random, so the set of the first ``j`` finishers is
    a uniform ``j``-subset and ``P(g <= j)`` is the fraction of covering ``j``-subsets:
    exact enumeration of subsets (equivalent to enumerating the ``K!`` orders) when
    there are at most ``exact_limit`` of them, else ``samples`` seeded random orders.
    """
    P = check_P(inst, P)
    K, q = inst.K, inst.q
    n_subsets = sum(math.comb(K, j) for j in range(q, K + 1))
    if n_subsets <= exact_limit:
        cdf: dict[int, Fraction] = {}
        for j in range(q, K + 1):
            sets = np.array(list(itertools.combinations(range(K), j)), dtype=np.int64)
            fin = np.zeros((len(sets), K), dtype=bool)
            np.put_along_axis(fin, sets, True, axis=1)
            cdf[j] = Fraction(int(covers(inst, P, fin).sum()), len(sets))
        cdf[K] = Fraction(1)  # all servers hold every row
        pmf: dict[int, float] = {}
        prev = Fraction(0)
        for j in range(q, K + 1):
            if cdf[j] > prev:
                pmf[j] = float(cdf[j] - prev)
                prev = cdf[j]
        return pmf, True
    rng = np.random.default_rng(seed)
    orders = np.argsort(rng.random((samples, K)), axis=1)
    need = np.full(samples, K, dtype=np.int64)
    for j in range(K, q - 1, -1):
        fin = np.zeros((samples, K), dtype=bool)
        np.put_along_axis(fin, orders[:, :j], True, axis=1)
        need[covers(inst, P, fin)] = j
    values, counts = np.unique(need, return_counts=True)
    return {int(v): float(c) / samples for v, c in zip(values, counts)}, False


def mean_servers_needed(pmf: dict[int, float]) -> float:
    """``E[g]`` of a :func:`servers_needed_pmf` distribution."""
    return float(sum(g * p for g, p in pmf.items()))
