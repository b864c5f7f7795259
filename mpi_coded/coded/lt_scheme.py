"""The ``lt`` scheme: LT-coded storage in the unified batch layout (SPEC B.5; seed 001, Sec. VI).

This module is the glue between :mod:`mpi_coded.coded.lt` (the code itself:
robust Soliton degrees, sparse encoding, peeling with inactivation) and the
scheme-agnostic pure functions the MPI runtime calls (``build_placement``,
``build_code``, ``map_phase_done``/``map_end``, ``shuffle_plan``,
``scheme_load``).  Design:

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
* **Code** -- :func:`mpi_coded.coded.lt.lt_code` with ``(m, r, field, c, delta)``
  and ``seed = lt_seed(params)``, a SHA-256 digest of the parameters that fix the
  code (``K, q, mu, rows_per_batch``, the field, ``c``, ``delta``): every rank
  builds the same ``Psi_LT`` from the params alone, whatever ``PYTHONHASHSEED``.
* **Map end** -- the first ``g >= q`` finishers, in finishing order, whose stored
  rows together decode (:meth:`~mpi_coded.coded.lt.LTCode.decodable`, an exact
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
* **Load** -- ``scheme_load("lt", ...)`` is the unified ``L(q)``, a lower bound:
  the measured LT load exceeds it by ``w`` values per overhead row a reducer
  receives beyond ``m - |R|`` (``w = N / q``), i.e. by the extra unicasts.
* **Validation** (:func:`mpi_coded.coded.params.validate`, the only place with
  the rules): ``T = 1``; ``q < K`` (with ``q = K``, ``r = m``: no spare rows);
  the full code (all ``r`` rows) decodes, else ``rows_per_batch`` is too small.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Sequence

import numpy as np

from mpi_coded.coded import lt
from mpi_coded.coded.codes import Code, CodeLayout, code_layout
from mpi_coded.coded.params import CodedParams
from mpi_coded.errors import ConfigError, require
from mpi_coded.fields import Field, get_field

LT_C = lt.DEFAULT_C
"""Robust Soliton ``c`` of the scheme's code."""
LT_DELTA = lt.DEFAULT_DELTA
"""Robust Soliton ``delta`` of the scheme's code."""


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
    require(params.scheme == "lt", "scheme", "an LT code exists only for scheme lt",
            params.scheme)
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
    return lt.server_rows(params.K, params.replication, params.rows_per_batch, server)


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

    ``known`` and ``candidates`` are disjoint coded rows.  Decodability is
    monotone in ``n`` (more rows never hurt), so: gallop up from the first ``n``
    that can reach ``m`` rows, then bisect.  Raises ConfigError (``Q``) if all
    candidates together do not decode.
    """
    code = scheme_code(params)
    base = [int(x) for x in known]
    cand = [int(x) for x in candidates]

    def ok(n: int) -> bool:
        return len(base) + n >= code.m and code.decodable(base + cand[:n])

    if ok(0):
        return 0
    lo = max(code.m - len(base) - 1, 0)  # a prefix of lo rows fails: too few rows, or lo = 0
    if lo >= len(cand):
        raise ConfigError("Q", "the finishers' coded rows do not decode (use mapend.map_end "
                          "to add extra servers)")
    step = 1
    while True:
        hi = min(lo + step, len(cand))
        if ok(hi):
            break
        if hi == len(cand):
            raise ConfigError("Q", "the finishers' coded rows do not decode (use "
                              "mapend.map_end to add extra servers)")
        lo, step = hi, step * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


class LTSchemeCode(Code):
    """:class:`~mpi_coded.coded.codes.Code` interface over the scheme's LT code.

    ``encode(A, rows)`` costs ``deg`` products per coded row (sparse);
    ``decode(rows, values)`` is peeling with inactivation over *all* the given
    rows and raises :class:`~mpi_coded.coded.codes.NotDecodable` if they do not
    determine ``A X``.  There is no MDS generator (``Code.generator``/``decoders``
    are not set): :attr:`lt` is the code.
    """

    def __init__(self, layout: CodeLayout, field_: Field, code: lt.LTCode) -> None:
        # Code.__init__ would build an (r, m) MDS generator: not wanted here.
        self.layout = layout
        self.field = field_
        self.lt = code

    def psi(self) -> np.ndarray:
        """The dense ``r x m`` ``Psi_LT`` (tests and small sizes)."""
        return self.lt.generator()

    def encode(self, A: np.ndarray, rows: Sequence[int] | None = None) -> np.ndarray:
        return self.lt.encode(A, None if rows is None else list(rows))

    def decode_partition(self, rows: Sequence[int], values: np.ndarray) -> np.ndarray:
        return self.decode(rows, values)

    def decode(self, rows: Sequence[int], values: np.ndarray) -> np.ndarray:
        return self.lt.decode(list(rows), values)


def lt_scheme_code(params: CodedParams, field_: Field | None = None) -> LTSchemeCode:
    """``build_code`` for scheme lt: the seeded code over ``params.field_name``.

    ``field_`` must be that field: the map end and the shuffle plan decide
    decodability with the code over ``params.field_name``.
    """
    f = field_ or get_field(params.field_name)
    require(f.name == params.field_name, "field",
            f"the lt plan is decided over {params.field_name}: build the code over it", f.name)
    return LTSchemeCode(code_layout(params), f, scheme_code(params))


__all__ = [
    "LT_C", "LT_DELTA", "LTSchemeCode", "finishers_decode",
    "full_code_decodes", "lt_scheme_code", "lt_seed", "scheme_code", "stored_rows",
    "unicast_count",
]
