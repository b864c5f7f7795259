"""The coded schemes, one object each, and the registry that names them.

=========== ===================== ====================================================
name        object                its parts (layout, code, loads, delay)
=========== ===================== ====================================================
``uc``      :data:`.uc.UC`         ``UncodedLayout``, ``IDENTITY_CODE``, ``UnifiedLoadRule``,
                                   ``UncodedTerms``
``cmr``     :data:`.cmr.CMR`       ``IdentityLayout``, ``IDENTITY_CODE``,
                                   ``UnifiedLoadRule``, ``UncodedTerms``
``sc``      :data:`.sc.SC`         ``StripedLayout``, ``MDS_CODE``, ``UnifiedLoadRule``,
                                   ``StripedTerms``
``unified`` :data:`.unified.UNIFIED` the defaults: ``BatchLayout``, ``MDS_CODE``,
                                   ``UnifiedLoadRule``, ``DenseTerms``
``bdc``     :data:`.bdc.BDC`       ``BlockDiagonalLayout``, ``MDS_CODE``, ``NoClosedForm``,
                                   ``BlockDiagonalTerms``; compares strategies
``lt``      :data:`.lt.LT_SCHEME`  ``LTLayout``, ``LTCodeRules``, ``LTLoad``, ``LTTerms``
=========== ===================== ====================================================

Every scheme is a :class:`~mpi_coded.coded.schemes.base.Scheme` composed of a layout
(:mod:`.layout`), a code rule (:mod:`.code_rules`), a load rule (:mod:`.load_rules`)
and delay terms (:mod:`.delay_terms`); the rest of the package asks it, never its
name.  To add one: a module here building its ``Scheme``, and its name in
:func:`mpi_coded_register` below, the same hook a plugin defines.
"""

from __future__ import annotations

from typing import Any

from mpi_coded.coded.params import AUTO_FIELD, CodedParams
from mpi_coded.coded.schemes.base import REGISTRY, ModelTerms, Scheme
from mpi_coded.coded.schemes.bdc import BDC
from mpi_coded.coded.schemes.cmr import CMR
from mpi_coded.coded.schemes.lt import LT_SCHEME
from mpi_coded.coded.schemes.sc import SC
from mpi_coded.coded.schemes.uc import UC
from mpi_coded.coded.schemes.unified import UNIFIED
from mpi_coded.registry import HookRegistrar, Registry


def mpi_coded_register(registry: HookRegistrar) -> None:
    """The package's own schemes, through the hook a plugin uses."""
    for scheme in (UC, CMR, SC, UNIFIED, BDC, LT_SCHEME):
        registry.scheme(scheme)


mpi_coded_register(HookRegistrar("mpi_coded", {"scheme": REGISTRY}))

SCHEMES: tuple[str, ...] = tuple(REGISTRY)
"""The built-in schemes' names, as on the command line."""


def get(name: str) -> Scheme:
    """The registered scheme called ``name``; ConfigError (``scheme``) if there is none."""
    return REGISTRY.lookup(name)


def names(**flags: bool) -> tuple[str, ...]:
    """Names of the registered schemes whose attributes match ``flags``, e.g.
    ``names(closed_form_load=True)`` (the ``load`` command's choices)."""
    return REGISTRY.names(**flags)


def coded_params(scheme: str, K: Any, q: Any, mu: Any, rows_per_batch: Any, n: Any, N: Any,
                 T: Any = 1, field: str = AUTO_FIELD) -> CodedParams:
    """A runnable job's parameters by scheme name (:meth:`Scheme.params`)."""
    return get(scheme).params(K, q, mu, rows_per_batch, n, N, T, field)


__all__ = ["REGISTRY", "SCHEMES", "ModelTerms", "Registry", "Scheme", "coded_params", "get",
           "names"]
