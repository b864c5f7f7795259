"""The coded schemes, one object each, and the registry that names them.

=========== ============================================ ===================
name        object                                       module
=========== ============================================ ===================
``uc``      :class:`~.uc.Uncoded`                         :mod:`.uc`
``cmr``     :class:`~.cmr.CodedMapReduce`                 :mod:`.cmr`
``sc``      :class:`~.sc.StragglerCoding`                 :mod:`.sc`
``unified`` :class:`~.unified.Unified`                    :mod:`.unified`
``bdc``     :class:`~.bdc.BlockDiagonal`                  :mod:`.bdc`
``lt``      :class:`~.lt.LTScheme`                        :mod:`.lt`
=========== ============================================ ===================

Every scheme is a :class:`~mpi_coded.coded.schemes.base.Scheme`; the rest of
the package asks it, never its name.  To add one: a module here with a
subclass, and a line in :data:`REGISTRY`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from mpi_coded.coded.params import AUTO_FIELD, CodedParams
from mpi_coded.coded.schemes.base import ModelTerms, Scheme
from mpi_coded.coded.schemes.bdc import BlockDiagonal
from mpi_coded.coded.schemes.cmr import CodedMapReduce
from mpi_coded.coded.schemes.lt import LTScheme
from mpi_coded.coded.schemes.sc import StragglerCoding
from mpi_coded.coded.schemes.uc import Uncoded
from mpi_coded.coded.schemes.unified import Unified
from mpi_coded.errors import ConfigError

REGISTRY: Mapping[str, Scheme] = MappingProxyType({s.name: s for s in (
    Uncoded(), CodedMapReduce(), StragglerCoding(), Unified(), BlockDiagonal(), LTScheme())})
"""Scheme name -> scheme object, in command-line order."""

SCHEMES: tuple[str, ...] = tuple(REGISTRY)
"""Scheme names, as on the command line."""


def get(name: str) -> Scheme:
    """The scheme called ``name``; ConfigError (``scheme``) if there is none."""
    scheme = REGISTRY.get(name) if isinstance(name, str) else None
    if scheme is None:
        raise ConfigError("scheme", f"must be one of {', '.join(SCHEMES)}", name)
    return scheme


def names(**flags: bool) -> tuple[str, ...]:
    """Names of the schemes whose attributes match ``flags``, e.g.
    ``names(closed_form_load=True)`` (the ``load`` command's choices)."""
    return tuple(n for n, s in REGISTRY.items()
                 if all(getattr(s, k) == v for k, v in flags.items()))


def coded_params(scheme: str, K: Any, q: Any, mu: Any, rows_per_batch: Any, n: Any, N: Any,
                 T: Any = 1, field: str = AUTO_FIELD) -> CodedParams:
    """A runnable job's parameters by scheme name (:meth:`Scheme.params`)."""
    return get(scheme).params(K, q, mu, rows_per_batch, n, N, T, field)


__all__ = ["REGISTRY", "SCHEMES", "ModelTerms", "Scheme", "coded_params", "get", "names"]
