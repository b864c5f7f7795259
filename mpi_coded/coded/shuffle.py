"""The shuffle plan for a given ``Q`` (docs/theory.md (B.3); Li, Maddah-Ali, Avestimehr 2016).

Everything a runtime needs to send, receive and decode, as plain frozen
dataclasses.  Vocabulary:

* Server ``s`` holds, for every batch ``b`` it stores, the ``eta_b x N``
  matrix ``Y_b = C[batch_rows[b]] X`` (its *intermediate values*; row ``i`` of
  ``Y_b`` is the value of the ``i``-th slot of batch ``b``).
* Reducer ``Q[i]`` owns outputs ``[i w, (i+1) w)``, ``w = N / q_eff``
  (``q_eff = q``; all ``K`` servers, in finishing order, for uc/cmr).
* A :class:`Block` is the rectangle ``Y_b[row_start:row_stop, out_start:out_stop]``
  flattened row-major; a list of blocks is their concatenation.

Multicast (levels ``j = mu q .. s_q``, plus ``s_q - 1`` under strategy 2; the
baselines use their effective ``mu q``): for each ``S`` in ``Q`` with
``|S| = j + 1`` (``itertools.combinations`` of sorted ``Q``) and ``k`` in ``S``,
``V_k`` is the concatenation, over the batches ``b`` (ascending) whose label
meets ``Q`` in exactly ``S \\ {k}``, of ``Y_b[:, outputs of k]`` flattened
row-major; ``|V_k| = v = C(K-q, mu q - j) eta_b w``.

*Segment rule*: ``V_k`` is cut into ``j`` consecutive segments of
``L = ceil(v / j)`` values (the last ones shorter; a segment is zero-padded to
``L`` on the wire).  Segment ``g`` belongs to the ``g``-th server of
``sorted(S \\ {k})``.  Server ``s`` in ``S`` sends to ``S \\ {s}`` one message of
``L`` values: the sum (XOR in GF(2^l)) of its padded segments of the ``V_k``,
``k`` in ``S \\ {s}`` (``Multicast.segments[i]`` is the one for
``receivers[i]``).  Receiver ``k`` subtracts the segments of the other
``V_{k'}``, which it stores, and keeps its own.  The load counts each multicast
once with its padded length ``L``, so it equals the paper's ``B_j / j`` exactly
when ``j`` divides ``v``; otherwise it exceeds it by the padding,
``ShufflePlan.padding`` (exact).

Unicast: after the multicasts reducer ``k`` knows, for its outputs, every row of
the batches it stores or received; partition ``t`` still lacks
``max(0, k_t - known_t)`` values (``k_t = m`` for unified, ``m/T`` for bdc,
``q`` per sc stripe, all ``m`` rows for uc/cmr).  The missing rows are taken
batch by batch from batches held by some finisher (``Q`` then ``extra``), in
slot order inside a batch, visiting batches cyclically from batch
``floor(i C(K, p) / q_eff)`` for reducer ``Q[i]`` (this spreads the senders);
each batch's rows come from one holder, the one with the fewest unicast values
so far (ties: earliest finisher; :class:`UnicastBook`).  This is
:func:`deficit_unicasts`, the rule of :meth:`Scheme.reducer_rows
<mpi_coded.coded.schemes.base.Scheme.reducer_rows>`.

LT unicast (scheme lt, :func:`mpi_coded.coded.schemes.lt.lt_unicasts`): "lacks" is decided by
the LT decoder, not by a count.  ``R`` = the rows of the batches reducer
``Q[i]`` stores or recovered from multicasts; if ``R`` does not decode, the
candidate rows are those of the batches held by some finisher and not in ``R``,
visited cyclically from the same start batch, slots in order; the reducer
receives the shortest prefix of them that makes ``R`` decodable
(:func:`~mpi_coded.coded.schemes.lt.unicast_count`), each batch's rows from one
holder chosen as above.  Its ``decode_rows`` are ``R`` plus those rows (all it
holds; the LT decoder uses every row).  The master runs that search once
(:func:`settled_end`) and ``MAP_END`` carries each reducer's count
(``MapEnd.unicast_rows``): the finishers build the same plan from the counts.

Strategy: the analytic strategy of the unified formula at the scheme's
effective parameters (:meth:`Scheme.reference_load
<mpi_coded.coded.schemes.base.Scheme.reference_load>`), except that a scheme
with :attr:`~mpi_coded.coded.schemes.base.Scheme.compares_strategies` (bdc)
builds both and keeps the one sending fewer values for this ``Q`` (ties:
strategy 1).  Load = values / (``m N``).
"""

from __future__ import annotations

import itertools
import weakref
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from fractions import Fraction
from typing import Any

from mpi_coded.analysis.loads import UnifiedLoad, strategy_levels
from mpi_coded.coded.mapend import MapEnd, map_end
from mpi_coded.coded.placement import Placement
from mpi_coded.errors import require


@dataclass(frozen=True)
class Block:
    """``Y_batch[row_start:row_stop, out_start:out_stop]``, flattened row-major.

    Rows are batch-local slot indices (coded row ``batch_rows[batch][i]``);
    outputs are global output indices.
    """

    batch: int
    row_start: int
    row_stop: int
    out_start: int
    out_stop: int

    @property
    def size(self) -> int:
        return (self.row_stop - self.row_start) * (self.out_stop - self.out_start)

    def __str__(self) -> str:
        return (f"b{self.batch}[{self.row_start}:{self.row_stop},"
                f"{self.out_start}:{self.out_stop}]")


@dataclass(frozen=True)
class Segment:
    """Segment ``index`` of ``V_owner``: its blocks in order, ``size`` values before padding."""

    owner: int
    index: int
    blocks: tuple[Block, ...]
    size: int


@dataclass(frozen=True)
class Multicast:
    """One coded multicast: ``sender`` sends ``length`` values to ``receivers``.

    The payload is ``sum_i pad(segments[i], length)``; ``segments[i]`` is the
    segment of ``V_{receivers[i]}`` that ``receivers[i]`` recovers.
    """

    level: int
    group: tuple[int, ...]
    sender: int
    receivers: tuple[int, ...]
    length: int
    segments: tuple[Segment, ...]


@dataclass(frozen=True)
class Unicast:
    """``sender`` sends ``receiver`` the values of ``blocks`` (concatenated), ``size`` in all."""

    sender: int
    receiver: int
    blocks: tuple[Block, ...]
    size: int


@dataclass(frozen=True)
class ReducerPlan:
    """What reducer ``server`` ends with and decodes, for outputs ``[out_start, out_stop)``."""

    server: int
    out_start: int
    out_stop: int
    stored_batches: tuple[int, ...]
    multicast_batches: tuple[int, ...]  # batches recovered from multicasts
    unicast_rows: tuple[int, ...]  # coded rows received by unicast
    decode_rows: tuple[int, ...]  # k coded rows per partition, partition by partition
    # (lt: every row the reducer holds, ascending; they decode)


@dataclass(frozen=True)
class ShufflePlan:
    """The full shuffle for one ``(Q, extra)``; see the module docstring."""

    scheme: str
    K: int
    q: int  # servers waited for (q_eff)
    m: int
    N: int
    Q: tuple[int, ...]
    extra: tuple[int, ...]
    s_q: int
    strategy: int
    levels: tuple[int, ...]
    reducers: tuple[ReducerPlan, ...]
    multicasts: tuple[Multicast, ...]
    unicasts: tuple[Unicast, ...]
    multicast_values: int  # padded lengths, each multicast counted once
    unicast_values: int
    ideal_multicast: Fraction  # sum of v / j: the multicast values without padding

    @property
    def values(self) -> int:
        """Values sent in the shuffle (multicasts once, with padding)."""
        return self.multicast_values + self.unicast_values

    @property
    def padding(self) -> Fraction:
        """Padded (zero) values sent beyond the paper's ``v / j`` per multicast."""
        return self.multicast_values - self.ideal_multicast

    @property
    def load(self) -> Fraction:
        """Normalised load: values / (``m N``)."""
        return Fraction(self.values, self.m * self.N)

    @property
    def multicast_load(self) -> Fraction:
        return Fraction(self.multicast_values, self.m * self.N)

    @property
    def unicast_load(self) -> Fraction:
        return Fraction(self.unicast_values, self.m * self.N)

    def wire_bytes(self, itemsize: int) -> int:
        """Bytes on the wire for ``itemsize``-byte values (multicasts counted once)."""
        return self.values * itemsize

    def sends(self, server: int) -> tuple[list[int], list[int]]:
        """Indices into ``multicasts`` and ``unicasts`` that ``server`` sends, in plan order.

        A message's index in its tuple is a stable id both ends can compute
        (e.g. for MPI tags); every server should process messages in that order.
        """
        return ([i for i, mc in enumerate(self.multicasts) if mc.sender == server],
                [i for i, u in enumerate(self.unicasts) if u.sender == server])

    def receives(self, server: int) -> tuple[list[int], list[int]]:
        """Indices into ``multicasts`` and ``unicasts`` that ``server`` receives."""
        return ([i for i, mc in enumerate(self.multicasts) if server in mc.receivers],
                [i for i, u in enumerate(self.unicasts) if u.receiver == server])

    def level_values(self) -> dict[int, int]:
        """Multicast values sent per level."""
        out: dict[int, int] = defaultdict(int)
        for mc in self.multicasts:
            out[mc.level] += mc.length
        return dict(out)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (fractions as strings)."""
        d = asdict(self)
        d["ideal_multicast"] = str(self.ideal_multicast)
        d["values"] = self.values
        d["load"] = str(self.load)
        return d

    def describe(self, detail: bool = False) -> str:
        """Human-readable plan: one line per message (``detail`` lists the blocks)."""
        lines = [
            f"{self.scheme}: K={self.K} q={self.q} m={self.m} N={self.N} Q={list(self.Q)} "
            f"extra={list(self.extra)} s_q={self.s_q} strategy={self.strategy} "
            f"levels={list(self.levels)}",
        ]
        for red in self.reducers:
            lines.append(f"  reducer {red.server}: outputs [{red.out_start}, {red.out_stop})")
        for mc in self.multicasts:
            segs = " + ".join(f"V{sg.owner}[{sg.index}]" for sg in mc.segments)
            line = (f"  multicast j={mc.level} S={list(mc.group)} {mc.sender} -> "
                    f"{list(mc.receivers)}: {mc.length} values = {segs}")
            if detail:
                line += "  (" + "; ".join(
                    f"V{sg.owner}[{sg.index}]=" + "+".join(str(b) for b in sg.blocks)
                    for sg in mc.segments) + ")"
            lines.append(line)
        for uc in self.unicasts:
            line = f"  unicast {uc.sender} -> {uc.receiver}: {uc.size} values"
            if detail:
                line += " (" + " ".join(str(b) for b in uc.blocks) + ")"
            lines.append(line)
        lines.append(
            f"  values: multicast {self.multicast_values} (padding {self.padding}), "
            f"unicast {self.unicast_values}; load {self.load} = {float(self.load):.6f}")
        return "\n".join(lines)


def _flat_blocks(batches: Sequence[int], eta: int, out_start: int, w: int,
                 a: int, b: int) -> tuple[Block, ...]:
    """Blocks covering flat values ``[a, b)`` of ``concat_b Y_b[:, out_start:out_start+w]``."""
    per = eta * w
    if b <= a or per <= 0:
        return ()
    blocks: list[Block] = []
    # only the batches that meet [a, b) (the others contribute nothing)
    for i in range(max(0, a // per), min(len(batches), (b - 1) // per + 1)):
        batch = batches[i]
        lo, hi = max(a, i * per), min(b, (i + 1) * per)
        if lo >= hi:
            continue
        lo, hi = lo - i * per, hi - i * per
        r0, c0 = divmod(lo, w)
        r1, c1 = divmod(hi, w)
        if r0 == r1:
            blocks.append(Block(batch, r0, r0 + 1, out_start + c0, out_start + c1))
            continue
        if c0:
            blocks.append(Block(batch, r0, r0 + 1, out_start + c0, out_start + w))
            r0 += 1
        if r1 > r0:
            blocks.append(Block(batch, r0, r1, out_start, out_start + w))
        if c1:
            blocks.append(Block(batch, r1, r1 + 1, out_start, out_start + c1))
    return tuple(blocks)


def _runs(slots: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted slot indices as ``[start, stop)`` runs."""
    out: list[tuple[int, int]] = []
    for s in sorted(slots):
        if out and out[-1][1] == s:
            out[-1] = (out[-1][0], s + 1)
        else:
            out.append((s, s + 1))
    return out


def _check_q(placement: Placement, Q: tuple[int, ...], extra: tuple[int, ...]) -> None:
    K, q = placement.K, placement.params.wait_for
    allq = Q + extra
    require(len(Q) == q, "Q", f"must list exactly {q} servers", list(Q))
    require(all(0 <= s < K for s in allq), "Q", f"servers must be in 0..{K - 1}", list(allq))
    require(len(set(allq)) == len(allq), "Q", "servers must be distinct", list(allq))


def analytic_load(placement: Placement) -> UnifiedLoad:
    """The docs/theory.md (B.3) quantities the plan follows: the unified formula at the
    scheme's effective parameters (bdc and lt: those of the unified scheme)."""
    p = placement.params
    return p.spec.reference_load(p.K, p.q, p.mu)


def shuffle_plan(placement: Placement, end: MapEnd | Sequence[int],
                 strategy: int | None = None) -> ShufflePlan:
    """The shuffle plan for reducers ``end.Q`` (finishing order) and ``end.extra``.

    ``end`` may also be just ``Q``.  ``strategy`` (1 or 2) overrides the choice
    described in the module docstring.
    """
    if not isinstance(end, MapEnd):
        end = MapEnd(tuple(int(s) for s in end))
    Q, extra, counts = tuple(end.Q), tuple(end.extra), tuple(end.unicast_rows)
    _check_q(placement, Q, extra)
    require(not counts or (len(counts) == len(Q) and all(c >= 0 for c in counts)),
            "unicast_rows", f"must give one count >= 0 for each of the {len(Q)} reducers",
            list(counts))
    require(not counts or (strategy is None and placement.params.spec.searches_unicasts),
            "unicast_rows", "are settled for the scheme's own strategy, and only for a "
            "scheme that searches for them (settled_end)", list(counts))
    require(strategy in (None, 1, 2), "strategy", "must be 1 or 2", strategy)
    ul = analytic_load(placement)
    if strategy is not None:
        return _build(placement, Q, extra, ul, strategy, counts)
    if not placement.params.spec.compares_strategies:
        return _build(placement, Q, extra, ul, ul.strategy, counts)
    one = _build(placement, Q, extra, ul, 1, counts)
    two = _build(placement, Q, extra, ul, 2, counts)
    return two if two.values < one.values else one


def settled_end(placement: Placement, end: MapEnd) -> MapEnd:
    """``end`` with each reducer's unicast row count (``MapEnd.unicast_rows``) when the
    scheme finds it by a search (lt, :attr:`Scheme.searches_unicasts
    <mpi_coded.coded.schemes.base.Scheme.searches_unicasts>`); else ``end`` itself.

    The master calls it once at the map end and ``MAP_END`` carries the counts: every
    finisher derives the whole plan, and ``g`` searches at once on shared cores took
    several times one search (lt's plan at 1 Gbit/s, docs/benchmarks.md).  The plan
    built from the settled end is the plan built from ``end``.
    """
    if end.unicast_rows or not placement.params.spec.searches_unicasts:
        return end
    plan = shuffle_plan(placement, end)
    return replace(end, unicast_rows=tuple(len(r.unicast_rows) for r in plan.reducers))


class UnicastBook:
    """The unicasts of one plan: each batch's rows for a reducer come from one holder among
    the finishers, the one with the fewest unicast values so far (ties: earliest finisher)."""

    def __init__(self, placement: Placement, Q: tuple[int, ...], extra: tuple[int, ...],
                 outputs: dict[int, tuple[int, int]], counts: tuple[int, ...] = ()) -> None:
        self.placement = placement
        self.Q = Q
        self.counts = counts  # MapEnd.unicast_rows: the master's search, or ()
        self.finishers = Q + extra
        self.rank = {s: i for i, s in enumerate(self.finishers)}
        self.outputs = outputs  # reducer -> [out_start, out_stop)
        self.sent: dict[int, int] = defaultdict(int)
        self.blocks: dict[tuple[int, int], list[Block]] = defaultdict(list)

    def given(self, idx: int) -> int | None:
        """The unicast row count of reducer ``Q[idx]`` the map end carries, or None."""
        return self.counts[idx] if self.counts else None

    def holders(self, batch: int) -> list[int]:
        """Finishers storing ``batch``."""
        return [s for s in self.placement.labels[batch] if s in self.rank]

    def visit_order(self, idx: int) -> list[int]:
        """Batches visited for reducer ``Q[idx]``: cyclically from ``floor(idx C(K, p) / q)``."""
        nb = self.placement.n_batches
        start = idx * nb // len(self.Q)
        return list(itertools.chain(range(start, nb), range(start)))

    def send(self, batch: int, runs: Sequence[tuple[int, int]], receiver: int) -> None:
        """Unicast slots ``[r0, r1)`` of ``batch`` (for each run) to ``receiver``."""
        outs = self.outputs[receiver]
        sender = min(self.holders(batch), key=lambda s: (self.sent[s], self.rank[s]))
        self.sent[sender] += sum(r1 - r0 for r0, r1 in runs) * (outs[1] - outs[0])
        for r0, r1 in runs:
            self.blocks[(sender, receiver)].append(Block(batch, r0, r1, *outs))

    def unicasts(self) -> list[Unicast]:
        """The messages, reducer by reducer, senders in finishing order."""
        out: list[Unicast] = []
        for k in self.Q:
            for s in self.finishers:
                ublocks = self.blocks.get((s, k))
                if ublocks:
                    out.append(Unicast(s, k, tuple(ublocks), sum(b.size for b in ublocks)))
        return out


@dataclass(frozen=True)
class _RowIndex:
    """Per-placement lookups of the unicast rule, as plain Python ints (built once)."""

    batch_parts: tuple[tuple[int, ...], ...]  # partition of each slot of batch b
    part: list[int]  # partition of coded row r
    order: list[int]  # sort key of coded row r: by partition, then position in it


_ROW_INDEX: weakref.WeakKeyDictionary[Placement, _RowIndex] = weakref.WeakKeyDictionary()


def _row_index(placement: Placement) -> _RowIndex:
    idx = _ROW_INDEX.get(placement)
    if idx is None:
        part = [int(t) for t in placement.layout.row_partition.tolist()]
        pos = [int(x) for x in placement.layout.row_position.tolist()]
        width = max(pos, default=0) + 1
        idx = _RowIndex(tuple(tuple(part[r] for r in rows) for rows in placement.batch_rows),
                        part, [t * width + x for t, x in zip(part, pos)])
        _ROW_INDEX[placement] = idx
    return idx


def deficit_unicasts(book: UnicastBook, idx: int, known: set[int]
                     ) -> tuple[list[int], list[int]]:
    """The MDS unicast rule (module docstring) for reducer ``Q[idx]`` knowing ``known``
    batches: returns its unicast rows and its decode rows (``k`` per partition)."""
    placement = book.placement
    layout = placement.layout
    index = _row_index(placement)
    k = book.Q[idx]
    kk = layout.k
    deficit = [max(0, kk - int(c)) for c in placement.partition_counts(known).tolist()]
    missing = sum(deficit)
    got_rows: list[int] = []
    if missing:
        for b in book.visit_order(idx):
            if b in known or not book.holders(b):
                continue
            take: list[int] = []
            for i, t in enumerate(index.batch_parts[b]):
                if deficit[t] > 0:
                    deficit[t] -= 1
                    missing -= 1
                    take.append(i)
            if not take:
                continue
            book.send(b, _runs(take), k)
            rows_b = placement.batch_rows[b]
            got_rows.extend(rows_b[i] for i in take)
            if not missing:
                break
        if missing:  # map_end guarantees coverage; a bare Q may not
            require(False, "Q", "the finishers do not hold enough rows of every partition "
                    "(use mapend.map_end to add extra servers)", list(book.finishers))
    part = index.part
    rows = {r for b in known for r in placement.batch_rows[b]}
    rows.update(got_rows)
    have = sorted(rows, key=index.order.__getitem__)  # (partition, position): unique keys
    count = [0] * layout.T
    decode_rows = []
    for r in have:
        t = part[r]
        if count[t] < kk:
            count[t] += 1
            decode_rows.append(int(r))
    return [int(r) for r in got_rows], decode_rows


def _build(placement: Placement, Q: tuple[int, ...], extra: tuple[int, ...],
           ul: UnifiedLoad, strategy: int, counts: tuple[int, ...] = ()) -> ShufflePlan:
    params = placement.params
    eta, N, q = params.rows_per_batch, params.N, params.wait_for
    w = N // q
    levels = strategy_levels(params.replication, ul.s_q, strategy)
    qset = frozenset(Q)
    out_of = {k: (i * w, (i + 1) * w) for i, k in enumerate(Q)}

    by_meet: dict[frozenset[int], list[int]] = defaultdict(list)
    for b, lab in enumerate(placement.labels):
        by_meet[qset.intersection(lab)].append(b)

    delivered: dict[int, set[int]] = {k: set() for k in Q}
    multicasts: list[Multicast] = []
    mc_values = 0
    level_v: dict[int, int] = defaultdict(int)  # sum of v over a level's multicasts
    sorted_q = sorted(Q)
    for j in levels:
        for S in itertools.combinations(sorted_q, j + 1):
            sset = frozenset(S)
            first = by_meet.get(sset.difference((S[0],)))
            if not first:
                continue
            V = [by_meet.get(sset.difference((k,)), []) for k in S]
            v = len(first) * eta * w
            L = -(-v // j)
            for k, Vk in zip(S, V):
                delivered[k].update(Vk)
            # segment g of V_k belongs to the g-th server of sorted(S \ {k}) (S is sorted)
            for si, s in enumerate(S):
                recv = S[:si] + S[si + 1:]
                segs = []
                for ki, k in enumerate(S):
                    if ki == si:
                        continue
                    g = si - 1 if ki < si else si
                    a, b_ = g * L, min((g + 1) * L, v)
                    blocks = _flat_blocks(V[ki], eta, out_of[k][0], w, a, b_)
                    segs.append(Segment(owner=k, index=g, blocks=blocks, size=max(0, b_ - a)))
                multicasts.append(Multicast(j, S, s, recv, L, tuple(segs)))
            mc_values += L * (j + 1)
            level_v[j] += v * (j + 1)
    ideal = Fraction(0)
    for j, tot in level_v.items():
        ideal += Fraction(tot, j)

    book = UnicastBook(placement, Q, extra, out_of, counts)
    reducers: list[ReducerPlan] = []
    for idx, k in enumerate(Q):
        stored = set(placement.server_batches[k])
        got, decode_rows = params.spec.reducer_rows(book, idx, stored | delivered[k])
        reducers.append(ReducerPlan(
            server=k, out_start=out_of[k][0], out_stop=out_of[k][1],
            stored_batches=tuple(sorted(stored)),
            multicast_batches=tuple(sorted(delivered[k])),
            unicast_rows=tuple(got), decode_rows=tuple(decode_rows)))

    unicasts = book.unicasts()
    return ShufflePlan(
        scheme=params.scheme, K=params.K, q=q, m=params.m, N=N, Q=Q, extra=extra,
        s_q=ul.s_q, strategy=strategy, levels=levels, reducers=tuple(reducers),
        multicasts=tuple(multicasts), unicasts=tuple(unicasts),
        multicast_values=mc_values, unicast_values=sum(u.size for u in unicasts),
        ideal_multicast=ideal)


def average_load(placement: Placement, strategy: int | None = None) -> Fraction:
    """Exact mean plan load over all ``C(K, q_eff)`` sets ``Q`` (extras in ascending order).

    The value counts do not depend on the order inside ``Q`` nor on which
    extras send, only on the set ``Q``.  Meant for small ``K`` (bdc's ``L_Q(P)``).
    """
    K, q = placement.K, placement.params.wait_for
    total = Fraction(0)
    count = 0
    for Qs in itertools.combinations(range(K), q):
        rest = [s for s in range(K) if s not in Qs]
        total += shuffle_plan(placement, map_end(placement, list(Qs) + rest), strategy).load
        count += 1
    return total / count
