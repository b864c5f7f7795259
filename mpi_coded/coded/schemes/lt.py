"""Scheme ``lt``: LT-coded storage in the unified batch layout (docs/theory.md (B.5); the BDC
paper, Sec. VI).

The scheme object :data:`LT_SCHEME` plugs :mod:`mpi_coded.codes.lt` (the code
itself: robust Soliton degrees, sparse encoding, peeling with inactivation)
into the scheme-agnostic functions the MPI runtime calls (``build_placement``,
``build_code``, ``map_phase_done``/``map_end``, ``shuffle_plan``).  Design:

* **Sizes** -- the unified layout, unchanged: ``C(K, mu q)`` batches of
  ``eta_b`` coded rows, ``r = eta_b C(K, mu q)`` coded rows, coded row ``i`` is
  storage slot ``i`` (batch ``b`` holds rows ``[b eta_b, (b+1) eta_b)``), and
  ``m = r q / K`` rows of ``A`` (rate ``q/K``, as the unified MDS code).  We keep
  ``m = r q / K`` rather than shrinking ``m`` by an overhead margin: loads stay
  normalised by the same ``m N`` as the unified scheme, the multicast phase is
  the unified one value for value, and the LT overhead appears only as extra
  unicast values (and, when needed, extra finishers).  Any ``q`` servers hold
  ``r (1 - C(K-q, mu q) / C(K, mu q))`` distinct coded rows: for ``mu q >= 2``
  well above ``m`` (``K=6, q=4, mu=1/2``: 560 rows for ``m = 400``) so the first
  ``q`` finishers practically always decode; for ``mu q = 1`` exactly ``m``,
  which an LT code decodes only by luck, so the map phase waits for more.
* **Code** -- :func:`mpi_coded.codes.lt.lt_code` with ``(m, r, field, c, delta)``
  and ``seed = lt_seed(params)``, a SHA-256 digest of the parameters that fix the
  code (``K, q, mu, rows_per_batch``, the field, ``c``, ``delta``): every rank
  builds the same ``Psi_LT`` from the params alone, whatever ``PYTHONHASHSEED``.
* **Map end** -- the first ``g >= q`` finishers, in finishing order, whose stored
  rows together decode (:meth:`~mpi_coded.codes.lt.LTCode.decodable`, an exact
  rank test); ``Q`` = the first ``q`` (the reducers), the other ``g - q`` are
  *extra*: they send unicasts but do not reduce, like bdc's extras.
* **Shuffle** -- the unified multicast levels and finishing strategy of
  ``unified_load(K, q, mu)``; then for reducer ``Q[i]``, ``R`` = the rows of the
  batches it stores or recovered from multicasts.  If ``R`` does not decode, the
  candidates are the rows of the batches held by some finisher and not in ``R``
  (batches visited cyclically from ``floor(i C(K, mu q) / q)``, the unified
  rule's start; slots in order inside a batch) and the reducer receives by
  unicast the *shortest prefix* of candidates that makes ``R`` decodable
  (:func:`unicast_count`): the unified rule's ``m - |R|`` rows plus the LT
  overhead.  Each batch's rows come from one holder, the one with the fewest
  unicast values so far (ties: earliest finisher).  ``decode_rows`` is ``R``
  plus the unicast rows: every value the reducer holds for its outputs.
* **Load** -- the scheme's load (:class:`LTLoad`) is the unified ``L(q)``, a lower bound:
  the measured LT load exceeds it by ``w`` values per overhead row a reducer
  receives beyond ``m - |R|`` (``w = N / q``), i.e. by the extra unicasts.  The
  model's load is :func:`mpi_coded.analysis.loads.lt_load` (reducers needing
  ``(1 + eps) m`` values).
* **Validation** (:meth:`LTCodeRules.check_job`): ``T = 1``; ``q < K`` (with
  ``q = K``, ``r = m``: no spare rows); ``r <= LT_MAX_ROWS``; the full code
  (all ``r`` rows) decodes, else ``rows_per_batch`` is too small.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Iterable, Sequence

import numpy as np

from mpi_coded.analysis.delay import DelayCosts, Ops, encode_ops
from mpi_coded.analysis.loads import lt_load
from mpi_coded.coded.code import Code, CodeLayout
from mpi_coded.coded.params import CodedParams
from mpi_coded.coded.placement import Placement, server_rows
from mpi_coded.coded.schemes.base import Scheme
from mpi_coded.coded.schemes.delay_terms import ModelTerms
from mpi_coded.coded.schemes.layout import BatchLayout, check_equal_batches
from mpi_coded.coded.schemes.load_rules import UnifiedLoadRule
from mpi_coded.coded.shuffle import UnicastBook
from mpi_coded.codes import lt
from mpi_coded.errors import ConfigError, require
from mpi_coded.fields import Field

LT_C = lt.DEFAULT_C
"""Robust Soliton ``c`` of the scheme's code."""
LT_DELTA = lt.DEFAULT_DELTA
"""Robust Soliton ``delta`` of the scheme's code."""
LT_MAX_ROWS = 1_000_000
"""Most coded rows of an lt job (every rank builds and checks the seeded code at start)."""
LT_MAX_M = 100_000_000
"""Largest ``m`` the model's degree distribution takes."""


def lt_seed(params: CodedParams, field: str | None = None) -> int:
    """The code's seed: the first 8 bytes of SHA-256 over the parameters fixing the code."""
    name = field or params.field_name
    key = (f"lt|K={params.K}|q={params.q}|mu={params.mu}|eta={params.rows_per_batch}|"
           f"field={name}|c={LT_C!r}|delta={LT_DELTA!r}")
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") >> 1


@functools.lru_cache(maxsize=16)
def _code(m: int, r: int, field: str, seed: int) -> lt.LTCode:
    return lt.lt_code(m, r, field, LT_C, LT_DELTA, seed)


def scheme_code(params: CodedParams, field: str | None = None) -> lt.LTCode:
    """The scheme's ``Psi_LT`` over ``field`` (default ``params.field_name``); cached."""
    require(isinstance(params.spec.code, LTCodeRules), "scheme",
            "an LT code exists only for scheme lt", params.scheme)
    name = field or params.field_name
    return _code(params.m, params.r, name, lt_seed(params, name))


def full_code_decodes(params: CodedParams) -> bool:
    """Whether all ``r`` coded rows decode (the map phase can end at all); cached."""
    return _full_decodes(params)


@functools.lru_cache(maxsize=64)
def _full_decodes(params: CodedParams) -> bool:
    code = scheme_code(params)
    return code.decodable(np.arange(code.r))


def stored_rows(params: CodedParams, server: int) -> np.ndarray:
    """Coded rows stored at ``server`` (the unified batch layout)."""
    return server_rows(params.K, params.replication, params.rows_per_batch, server)


def finishers_decode(params: CodedParams, finished: Iterable[int]) -> bool:
    """Whether the rows stored at the servers ``finished`` together decode (cached per set)."""
    return _finishers_decode(params, frozenset(int(s) for s in finished))


@functools.lru_cache(maxsize=1024)
def _finishers_decode(params: CodedParams, finished: frozenset[int]) -> bool:
    if not finished:
        return False
    code = scheme_code(params)
    rows = np.unique(np.concatenate([stored_rows(params, s) for s in sorted(finished)]))
    return len(rows) >= code.m and code.decodable(rows)


def unicast_count(params: CodedParams, known: Sequence[int], candidates: Sequence[int]) -> int:
    """Smallest ``n`` such that ``known`` plus ``candidates[:n]`` decode.

    ``known`` and ``candidates`` are disjoint coded rows.  Each check's rank deficit is a
    lower bound on the rows still missing (:meth:`~mpi_coded.codes.lt.LTCode.deficit`),
    so the search jumps by it from ``m - |known|`` or the first prefix that touches every
    source row (:func:`~mpi_coded.codes.lt.covering_prefix`), whichever is later
    (:func:`~mpi_coded.codes.lt.shortest_decoding_prefix`): exact, and about two checks
    per reducer.  Raises ConfigError (``Q``) if all candidates together do not decode.
    """
    code = scheme_code(params)
    base = [int(x) for x in known]
    cand = [int(x) for x in candidates]
    cover = lt.covering_prefix(code, base, cand)
    n = None if cover is None else lt.shortest_decoding_prefix(
        lambda k: code.deficit(base + cand[:k]), max(code.m - len(base), cover), len(cand))
    if n is None:
        raise ConfigError("Q", "the finishers' coded rows do not decode (use mapend.map_end "
                          "to add extra servers)")
    return n


def lt_unicasts(book: UnicastBook, idx: int, known: set[int]) -> tuple[list[int], list[int]]:
    """The LT unicast rule (module docstring) for reducer ``Q[idx]`` knowing the batches
    ``known``: adds its unicasts to ``book``; returns its unicast rows and decode rows.
    The count is the book's (:meth:`~mpi_coded.coded.shuffle.UnicastBook.given`, the
    master's search carried by ``MAP_END``) when it has one, else :func:`unicast_count`."""
    placement = book.placement
    params = placement.params
    k = book.Q[idx]
    eta = params.rows_per_batch
    have = [r for b in sorted(known) for r in placement.batch_rows[b]]
    visit = [b for b in book.visit_order(idx) if b not in known and book.holders(b)]
    candidates = [r for b in visit for r in placement.batch_rows[b]]
    given = book.given(idx)
    if given is None:
        left = unicast_count(params, have, candidates)
    else:  # the master's search (MapEnd.unicast_rows): the reducer's decode checks it
        require(given <= len(candidates), "unicast_rows",
                f"reducer {k} has only {len(candidates)} candidate rows", given)
        left = given
    got = candidates[:left]
    for b in visit:
        if left == 0:
            break
        take = min(left, eta)
        book.send(b, [(0, take)], k)
        left -= take
    return got, sorted(set(have) | set(got))


class LTJobCode(Code):
    """:class:`~mpi_coded.coded.code.Code` over the scheme's LT code.

    ``encode(A, rows)`` costs ``deg`` products per coded row (sparse);
    ``decode(rows, values)`` is peeling with inactivation over *all* the given
    rows and raises :class:`~mpi_coded.errors.NotDecodable` if they do not
    determine ``A X``.  :attr:`lt` is the code.
    """

    def __init__(self, layout: CodeLayout, field_: Field, code: lt.LTCode) -> None:
        self.layout = layout
        self.field = field_
        self.lt = code
        self.encoders = {"generator": 1}  # sparse rows of Psi_LT
        self.decoders = {"peeling": 1}

    def psi(self) -> np.ndarray:
        """The dense ``r x m`` ``Psi_LT`` (tests and small sizes)."""
        return self.lt.generator()

    def warm_up(self) -> None:
        """The peeling decoder's kernels (:meth:`~mpi_coded.codes.lt.LTCode.warm_up`): the
        map-end rule, the shuffle plan and the reduce all decide with them."""
        self.lt.warm_up()

    def encode(self, A: np.ndarray, rows: Sequence[int] | None = None) -> np.ndarray:
        return self.lt.encode(A, None if rows is None else list(rows))

    def decode_partition(self, rows: Sequence[int], values: np.ndarray) -> np.ndarray:
        return self.decode(rows, values)

    def decode(self, rows: Sequence[int], values: np.ndarray) -> np.ndarray:
        return self.lt.decode(list(rows), values)


class LTLayout(BatchLayout):
    """The unified layout; an analytic setting needs whole batches (the model counts
    stored rows)."""

    def check_model_sizes(self, p: CodedParams) -> None:
        """Equal batches (:func:`~mpi_coded.coded.schemes.layout.check_equal_batches`)."""
        check_equal_batches(p)


class LTCodeRules:
    """The seeded LT code: decodable when the rows held determine ``A`` (an exact rank
    test), unicasts by :func:`lt_unicasts`; no MDS code, so ``auto`` is gf2^8."""

    mds = False
    cover_rule = " to decode the LT code"
    searches_unicasts = True

    def auto_field(self, p: CodedParams) -> str:
        return "gf2^8"

    def check_job(self, p: CodedParams) -> None:
        """``q < K``, ``r <= LT_MAX_ROWS`` and the seeded code decodes from all its rows."""
        require(p.q < p.K, "q",
                f"scheme lt needs q < K = {p.K}: with q = K there are only r = m coded rows "
                "and an LT code needs more than m", p.q)
        r = p.r
        require(r <= LT_MAX_ROWS, "rows_per_batch",
                f"scheme lt builds r = rows_per_batch * C(K, mu q) coded rows on every rank: "
                f"r must be <= {LT_MAX_ROWS} (r = {r})", p.rows_per_batch)
        require(full_code_decodes(p), "rows_per_batch",
                f"too small for scheme lt: all r = {r} coded rows of the seeded LT code "
                f"(seed {lt_seed(p)}) do not determine the m = {p.m} rows of A (an unlucky "
                "draw, likelier for short codes): use more rows per batch", p.rows_per_batch)

    def model_length(self, p: CodedParams) -> int | None:
        return None

    def build(self, p: CodedParams, f: Field, layout: CodeLayout) -> Code:
        """The seeded code over ``p.field_name``: ``f`` must be that field (the map end
        and the shuffle plan decide decodability with the code over it)."""
        require(f.name == p.field_name, "field",
                f"the lt plan is decided over {p.field_name}: build the code over it", f.name)
        return LTJobCode(layout, f, scheme_code(p))

    def covered(self, placement: Placement, finished: Sequence[int]) -> bool:
        """Whether the finishers' stored rows together decode."""
        return finishers_decode(placement.params, finished)

    def reducer_rows(self, book: UnicastBook, idx: int, known: set[int]
                     ) -> tuple[list[int], list[int]]:
        return lt_unicasts(book, idx, known)


class LTLoad(UnifiedLoadRule):
    """The unified ``L(q)``: a lower bound (module docstring)."""

    closed_form = False


class LTTerms:
    """Mean-degree encoding; peeling costs one product and one addition per edge of
    ``ceil(m (1 + eps))`` rows; waits for the first ``g`` holding that many rows; load
    :func:`~mpi_coded.analysis.loads.lt_load`."""

    def check_setting(self, p: CodedParams, eps: float | None, c: float,
                      delta: float) -> None:
        """``m <= LT_MAX_M``, ``c > 0``, ``0 < delta < 1``, ``eps >= 0``, ``m (1 + eps) <= r``."""
        require(p.m <= LT_MAX_M, "m", f"the LT degree distribution needs m <= {LT_MAX_M}",
                p.m)
        require(c > 0, "c", "must be > 0", c)
        require(0 < delta < 1, "delta", "must be in (0, 1)", delta)
        e = self.overhead(p, eps, c, delta)
        require(math.isfinite(e) and e >= 0, "eps", "must be a number >= 0", e)
        require(math.ceil(p.m * (1 + e)) <= p.r, "eps",
                f"m (1 + eps) must not exceed the r = {p.r} coded rows", e)

    @staticmethod
    def overhead(p: CodedParams, eps: float | None, c: float, delta: float) -> float:
        """The LT overhead the model uses: ``eps``, or the robust Soliton design overhead."""
        if eps is not None:
            return float(eps)
        return lt.design_overhead(p.m, c, delta)

    @staticmethod
    def servers_needed(p: CodedParams, eps: float) -> int:
        """First ``g >= q`` whose stored rows number ``>= ceil(m (1 + eps))`` (batch layout)."""
        need = math.ceil(p.m * (1 + eps))
        for g in range(p.q, p.K + 1):
            held = p.rows_per_batch * (p.n_batches - math.comb(p.K - g, p.replication))
            if held >= need:
                return g
        raise ConfigError("eps", "even all K servers do not hold m (1 + eps) coded rows", eps)

    def terms(self, p: CodedParams, eps: float | None, c: float, delta: float,
              costs: DelayCosts) -> ModelTerms:
        e = self.overhead(p, eps, c, delta)
        rows = float(p.mu_eff * p.m)
        dbar = lt.mean_degree(p.m, c, delta)
        edges = math.ceil(p.m * (1 + e)) * dbar
        enc: Ops = encode_ops(rows, dbar, p.n)
        return ModelTerms(rows=rows, encode=enc, decode_per_output=costs.cost(Ops(edges, edges)),
                          decoder="peeling", servers_needed={self.servers_needed(p, e): 1.0},
                          load=lt_load(p.K, p.q, p.mu, e), eps=e, encoder="generator")


LT_SCHEME = Scheme(
    "lt", "LT code in the unified batch layout, decoded by peeling with inactivation",
    layout=LTLayout(), code=LTCodeRules(), loads=LTLoad(), delay=LTTerms())


__all__ = [
    "LT_C", "LT_DELTA", "LT_SCHEME", "LTCodeRules", "LTJobCode", "LTLayout", "LTLoad", "LTTerms",
    "finishers_decode", "full_code_decodes",
    "lt_seed", "lt_unicasts", "scheme_code", "stored_rows", "unicast_count",
]
