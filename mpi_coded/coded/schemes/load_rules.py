"""Load formulas: a scheme's closed-form communication load (docs/theory.md (B.3)).

A scheme's load rule (``Scheme.loads``, a :class:`LoadRule`) is given the unified
formula at the scheme's effective parameters (the *reference* load,
:meth:`~mpi_coded.coded.schemes.base.Scheme.reference_load`, which also drives the
shuffle plan) and says what the scheme's load is and how the papers write it.
:class:`UnifiedLoadRule` is the unified scheme's: the reference load itself.
uc, cmr and sc keep it with their literal forms (``1 - 1/K``, ...); bdc has none
(:class:`NoClosedForm`); lt's is a lower bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

from mpi_coded.analysis.loads import UnifiedLoad
from mpi_coded.errors import ConfigError


class LoadRule(Protocol):
    """What a scheme's load rule answers (module docstring)."""

    @property
    def closed_form(self) -> bool:
        """:meth:`load` is the scheme's load (bdc: none; lt: only a lower bound)."""

    def load(self, reference: UnifiedLoad) -> UnifiedLoad:
        """The closed-form load, from the reference load."""
    def literal(self, K: int, q: int, mu: Fraction, reference: UnifiedLoad) -> Fraction:
        """The load as the papers write it at the reference parameters ``K, q, mu``."""


class UnifiedLoadRule:
    """The unified formula at the effective parameters is the load.  A subclass changes
    the literal form (uc, cmr, sc) or says the formula is only a lower bound
    (``closed_form = False``: lt)."""

    closed_form = True

    def load(self, reference: UnifiedLoad) -> UnifiedLoad:
        """The reference load."""
        return reference

    def literal(self, K: int, q: int, mu: Fraction, reference: UnifiedLoad) -> Fraction:
        """``L(q)``."""
        return self.load(reference).load


@dataclass(frozen=True)
class NoClosedForm:
    """No closed-form load: :meth:`load` refuses, saying why (``value``: the scheme)."""

    why: str
    value: str
    closed_form = False

    def load(self, reference: UnifiedLoad) -> UnifiedLoad:
        raise ConfigError("scheme", self.why, self.value)

    def literal(self, K: int, q: int, mu: Fraction, reference: UnifiedLoad) -> Fraction:
        return self.load(reference).load
