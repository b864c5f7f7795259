"""Wrong answers in an elastic step: located, decoded around, named (docs/theory.md, A.10).

A machine may answer *well-formed and wrong* (silent data corruption, a corrupt block, a
mercurial core).  The master checks every decoded ``y`` (exactly against ``X``, or by
Freivalds' check against the store's sketch: :mod:`mpi_coded.store.sketch`).  When the
check fails:

1. **Consistency** (:func:`inconsistent_sets`): a row set ``M_f`` answered by ``k > L``
   machines is one codeword of the ``[k, L]`` MDS code ``G_P`` restricted to them:
   decoding ``Z_f`` from ``L`` answers and re-encoding ``G[n] Z_f`` must give every other
   answer.  Any single wrong answer among ``L + 1`` breaks this (an MDS code of
   distance 2 detects one error, deterministically); the machines of the inconsistent
   sets are the candidates.
2. **Search** (:func:`search`): first, where a row set has ``k >= L + 2`` answers, the
   one wrong answer among them is singled out by the set alone (:func:`outvoted`: left
   out, the other ``k - 1`` are one codeword; left in, no ``L`` of them agree with all
   the rest), and the step decoded without those machines is checked once.  Then, for
   each set ``E`` of up to ``S`` candidates (one first), decode every row set from ``L``
   answers of machines outside ``E`` (the spare answers) and check the decoded ``y``; the
   first ``y`` that passes is the step's result.
3. **Naming** (:func:`wrong_answers`): against the verified ``Z`` (the ``L x R`` rows of
   ``X_1 w .. X_L w``), every answer of every attempt is re-encoded, ``G[n] Z[:, M_f]``, and
   compared: the answers that differ are the wrong ones (exact over GF(2^l); over float64
   beyond the field's tolerance, relative to the answer's largest entry).  The naming
   does not depend on which ``E`` passed, so an innocent machine is never named unless
   the check of ``y`` itself was fooled.

One spare answer per wrong machine suffices, against two for Lagrange coded computing
(Yu et al., AISTATS 2019), because the check of ``y`` tells a right decode from a wrong
one.  A wrong ``y`` passes Freivalds' check over GF(2^l) with probability at most
``2^(-l k)`` (:data:`mpi_coded.store.sketch.SKETCH_K`) and the exact check never.
Pure: plain integers and arrays, no MPI.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpi_coded.cec.decode import StepDecoder, decode_parts
from mpi_coded.cec.step_plan import StepPlan
from mpi_coded.fields import Field

Answers = dict[int, dict[int, np.ndarray]]
"""Row set ``f`` -> machine ``n`` -> its answer ``X~_n[M_f] w`` (in arrival order)."""

MAX_HYPOTHESES = 512
"""Decodes tried at most per search (a bound on the master's work on a failed check)."""


@dataclass(frozen=True)
class WrongAnswer:
    """One wrong answer: the machine, the row set and its rows ``[a, b)``, the attempt it
    belongs to and how it was found (``spare``: decoded around with the spare answers
    already sent; ``re-asked``: the row sets were asked again within the step; ``unused``,
    ``probe``: re-encoded against the verified step; ``late``: it arrived after its step
    was verified and over, and was re-encoded against that step's result then: ``step``
    names that earlier step)."""

    machine: int
    set: int
    rows: tuple[int, int]
    attempt: int
    found: str
    step: int | None = None  # a ``late`` answer's own step (None: the step of the record)

    def to_dict(self) -> dict[str, Any]:
        out = {"machine": self.machine, "set": self.set, "rows": list(self.rows),
               "attempt": self.attempt, "found": self.found}
        return out if self.step is None else {**out, "step": self.step}


def split_results(plan: StepPlan, results: Mapping[int, np.ndarray]) -> Answers:
    """Per-set answers from per-machine ones (``S = 0``: each machine's ranges
    concatenated in plan order)."""
    offset = {n: 0 for n in plan.available}
    out: Answers = {}
    for f, (rs, (a, b)) in enumerate(zip(plan.sets, plan.set_ranges)):
        a, b = int(a), int(b)
        if b == a:
            continue
        for n in rs.machines:
            if n in results:
                out.setdefault(f, {})[n] = results[n][offset[n]: offset[n] + b - a]
            offset[n] += b - a
    return out


def _codeword_z(dec: StepDecoder, got: Sequence[tuple[int, np.ndarray]]) -> np.ndarray:
    """``Z_f`` (``L x |M_f|``) from ``L`` answers ``(n, y_n)``."""
    got = sorted(got, key=lambda x: x[0])
    inv = dec.decoder.inverse([n - 1 for n, _ in got])
    return dec.field.matmul(inv, np.stack([y for _, y in got]))


def _differs(field: Field, got: np.ndarray, want: np.ndarray) -> bool:
    if field.exact:
        return bool(np.any(got != want))
    return not field.verified(field.max_error(got, want))


def inconsistent_sets(plan: StepPlan, answers: Answers, dec: StepDecoder,
                      g: np.ndarray) -> list[int]:
    """The row sets answered by more than ``L`` machines whose answers are not one
    codeword (module docstring, 1)."""
    L, fld = plan.L, dec.field
    bad = []
    for f, got in answers.items():
        if len(got) <= L:
            continue
        items = list(got.items())
        z = _codeword_z(dec, items[:L])
        if any(_differs(fld, y, fld.matmul(g[n - 1], z)) for n, y in items[L:]):
            bad.append(f)
    return bad


def decode_without(plan: StepPlan, answers: Answers, dec: StepDecoder,
                   skip: frozenset[int], drop: Mapping[int, int] | None = None
                   ) -> np.ndarray | None:
    """The step decoded with no answer of ``skip`` nor machine ``drop[f]``'s of row set
    ``f`` (a copy of ``L x R``), or None when a row set then has fewer than ``L``
    answers."""
    drop = drop or {}
    kept = {f: {n: y for n, y in got.items() if n not in skip and drop.get(f) != n}
            for f, got in answers.items()}
    try:
        yb, _, _ = decode_parts(plan, kept, dec, condition=False)
    except ValueError:
        return None
    return yb.copy()


def candidates(plan: StepPlan, answers: Answers, dec: StepDecoder, g: np.ndarray,
               bad: Sequence[int] | None = None) -> list[int]:
    """The machines a search suspects: those of the inconsistent sets (``bad``, when
    known), the ones in most of them first; with none inconsistent, every machine of a
    set with a spare answer."""
    bad = inconsistent_sets(plan, answers, dec, g) if bad is None else bad
    count: dict[int, int] = {}
    for f in bad or [f for f, got in answers.items() if len(got) > plan.L]:
        for n in answers[f]:
            count[n] = count.get(n, 0) + 1
    return sorted(count, key=lambda n: (-count[n], n))


def outvoted(plan: StepPlan, answers: Answers, dec: StepDecoder, g: np.ndarray,
             bad: Sequence[int] | None = None) -> dict[int, int]:
    """Row set -> the machine whose answer the set alone proves wrong: in a set of ``k >= L + 2``
    answers that are not one codeword, ``n`` is outvoted when the codeword decoded from
    ``L`` of the others agrees with all ``k - 1`` others (so they are one codeword of
    the ``[k - 1, L]`` MDS code, of distance ``k - L >= 2``: a single wrong answer among
    them would break it) and not with ``n``'s.  At most ``k`` decodes a set; a set with
    two wrong answers or more outvotes no one."""
    L, fld = plan.L, dec.field
    out: dict[int, int] = {}
    for f in inconsistent_sets(plan, answers, dec, g) if bad is None else bad:
        items = list(answers[f].items())
        if len(items) < L + 2:
            continue
        for i, (n, _y) in enumerate(items):
            rest = items[:i] + items[i + 1:]
            z = _codeword_z(dec, rest[:L])
            if all(not _differs(fld, ym, fld.matmul(g[m - 1], z)) for m, ym in rest[L:]):
                out[f] = n  # the others are one codeword; the set is inconsistent: n
                break
    return out


def search(plan: StepPlan, answers: Answers, dec: StepDecoder, g: np.ndarray,
           accept: Callable[[np.ndarray], bool], max_wrong: int, fewest: int = 1
           ) -> tuple[np.ndarray, frozenset[int], dict[int, int]] | None:
    """The first decode without ``fewest`` to ``max_wrong`` suspected machines that
    ``accept`` takes (module docstring, 2; ``fewest = 0`` tries the plain decode first),
    the machines :func:`outvoted` by their row sets left out first (with up to
    ``max_wrong`` others): the decoded ``L x R``, the machines left out of every set and
    the answers dropped in one set only (row set -> machine, the outvoted ones); None when
    none passes within :data:`MAX_HYPOTHESES` decodes."""
    inconsistent = inconsistent_sets(plan, answers, dec, g)  # once: each is L decodes
    voted = outvoted(plan, answers, dec, g, inconsistent)
    cands = candidates(plan, answers, dec, g, inconsistent)
    bad = set(inconsistent) - set(voted)
    # the outvoted answers dropped, with up to max_wrong machines of the sets whose vote
    # failed (two wrong answers in one); then, should a vote have been fooled, without them
    unvoted = [c for c in cands if any(c in answers[f] for f in bad)]
    passes = [(voted, unvoted, 0)] if voted else []
    tried = 0
    for drop, pool, first in [*passes, ({}, cands, fewest)]:
        for k in range(first, max_wrong + 1):
            for extra in itertools.combinations(pool, k):
                skip = frozenset(extra)
                z = decode_without(plan, answers, dec, skip, drop)
                if z is None:
                    continue
                tried += 1
                if accept(z):
                    return z, skip, dict(drop)
                if tried >= MAX_HYPOTHESES:
                    return None
    return None


def wrong_answers(plan: StepPlan, answers: Answers, z: np.ndarray, g: np.ndarray,
                  field: Field, attempt: int, found: str, step: int | None = None
                  ) -> list[WrongAnswer]:
    """Every answer of ``answers`` that differs from its re-encoding against the verified
    ``z`` (module docstring, 3); an answer of the wrong length is wrong too."""
    out = []
    for f, got in sorted(answers.items()):
        a, b = (int(v) for v in plan.set_ranges[f])
        for n, y in got.items():
            if y.shape != (b - a,) or _differs(field, y, field.matmul(g[n - 1], z[:, a:b])):
                out.append(WrongAnswer(n, f, (a, b), attempt, found, step))
    return out
