"""Load formulas: a scheme's closed-form communication load (docs/theory.md (B.3)).

A scheme's load rule (``Scheme.loads``, a :class:`LoadRule`) is the one place its load
is declared: given the unified formula at the scheme's effective parameters (the
*reference* load, :meth:`~mpi_coded.coded.schemes.base.Scheme.reference_load`, which
also drives the shuffle plan) it gives the exact load (Fractions: multicast, unicast,
the levels).  The paper's form (``mpi-coded load``), the model's load and every run's
check derive from it.  :class:`UnifiedLoadRule` (the reference load itself) is every
built-in's with a closed form (uc ``1 - 1/K``, cmr, sc ``1 - 1/q``, unified); bdc has
none (:class:`NoClosedForm`); lt's is only a lower bound (``closed_form = False``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from mpi_coded.analysis.loads import UnifiedLoad
from mpi_coded.errors import ConfigError


class LoadRule(Protocol):
    """What a scheme's load rule answers (module docstring)."""

    @property
    def closed_form(self) -> bool:
        """:meth:`load` is the scheme's load (bdc: none; lt: only a lower bound)."""

    def load(self, reference: UnifiedLoad) -> UnifiedLoad:
        """The exact load, from the reference load."""


class UnifiedLoadRule:
    """The unified formula at the effective parameters is the load.  A subclass adds its
    own rules to :meth:`load` or says the formula is only a lower bound
    (``closed_form = False``: lt)."""

    closed_form = True

    def load(self, reference: UnifiedLoad) -> UnifiedLoad:
        """The reference load."""
        return reference


@dataclass(frozen=True)
class NoClosedForm:
    """No closed-form load: :meth:`load` refuses, saying why (``value``: the scheme)."""

    why: str
    value: str
    closed_form = False

    def load(self, reference: UnifiedLoad) -> UnifiedLoad:
        raise ConfigError("scheme", self.why, self.value)
