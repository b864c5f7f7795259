"""The public plugin API: everything a plugin imports, in one module.

A plugin is a ``.py`` file or a module that defines one function, the hook::

    from mpi_coded.plugin import Registrar

    def mpi_coded_register(registry: Registrar) -> None:
        registry.scheme(MY_SCHEME)        # a Scheme
        registry.policy(MY_POLICY)        # an ElasticPolicy
        registry.workload(MY_WORKLOAD)    # a Workload
        registry.fault(MY_FAULT_MODE)     # a FaultMode

and is loaded with ``mpi-coded --plugin PATH_OR_MODULE ...``, the ``MPI_CODED_PLUGINS``
environment variable, or the ``mpi_coded.plugins`` entry-point group (docs/plugins.md).
The package registers its own schemes, policies, workloads and fault modes through the
same hook, one per owning module.  Each kind has one idiom: a *value* built from parts
or a *subclass* overriding hooks, as listed below; docs/plugin-api.md is the reference
page of every name here.

Kinds
-----
* **Scheme** (coded job): a :class:`Scheme` value composed of four parts, each a small
  class to subclass from its default: a layout (:class:`BatchLayout`), code rules (an
  object with the methods of :data:`MDS_CODE`'s class, building a :class:`Code`), a load
  rule (:class:`UnifiedLoadRule`) and delay terms (:class:`DenseTerms`).  A code whose
  coded rows are plain copies is :class:`CopyCode` (no arithmetic); an MDS code per
  partition is :class:`PartitionCode`.  The scheme's own :meth:`Scheme.load` is what
  every run's measured load is compared with: a run that moves another load is not
  verified.
* **Elastic policy**: subclass :class:`ElasticPolicy` and implement
  :meth:`ElasticPolicy.assign` (loads and row sets; :func:`filled_sets` builds the row
  sets of loads); the package checks every plan (:func:`plan_violation`).
* **Workload** (elastic job): subclass :class:`Workload` (or :class:`FloatIterative`)
  and override :meth:`Workload.start`, :meth:`Workload.step` and
  :meth:`Workload.final_check`; the state between steps is an :class:`Iterate`.
* **Fault mode**: subclass :class:`FaultMode` and override :meth:`FaultMode.parse` and
  its hooks (:meth:`FaultMode.fire` given a :class:`FaultContext`,
  :meth:`FaultMode.time_factor`, :meth:`FaultMode.speed_factor`).

A plugin that breaks a rule of its kind is refused before MPI starts, in one line naming
the plugin; one that fails inside a running job ends the job in one line naming the
plugin (:class:`PluginError`), the results ending with a failure line.

Stability
---------
:data:`API_VERSION` is ``MAJOR.MINOR``.  Within a major version the names in
:data:`__all__` stay, with their signatures; a minor version may add names, optional
arguments with defaults and hooks with defaults.  Anything not in :data:`__all__`
(every other module of the package) may change in any release.  The results lines'
schema is versioned apart (``schema`` in every line,
:data:`mpi_coded.results.SCHEMA_VERSION`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from mpi_coded.analysis.delay import DelayCosts, Ops, mixture_order_mean
from mpi_coded.analysis.loads import UnifiedLoad
from mpi_coded.cec.filling import RowSet
from mpi_coded.cec.plan import POLICIES
from mpi_coded.cec.policies import filled_sets
from mpi_coded.cec.policy import Assignment, ElasticPolicy, plan_violation
from mpi_coded.cec.step_plan import StepPlan
from mpi_coded.cec.workloads import (
    REFERENCE_RTOL,
    WORKLOADS,
    FloatIterative,
    Iterate,
    Product,
    StepValues,
    Workload,
    relative_error,
    start_vector,
)
from mpi_coded.coded.code import Code, CodeLayout, CodeWork, PartitionCode
from mpi_coded.coded.copy_code import CopyCode, CopyCodeRules
from mpi_coded.coded.mapend import partitions_covered
from mpi_coded.coded.params import CodedParams, CodeShape
from mpi_coded.coded.placement import Placement
from mpi_coded.coded.schemes import REGISTRY
from mpi_coded.coded.schemes.base import Scheme
from mpi_coded.coded.schemes.code_rules import MDS_CODE
from mpi_coded.coded.schemes.delay_terms import DenseTerms
from mpi_coded.coded.schemes.layout import BatchLayout
from mpi_coded.coded.schemes.load_rules import UnifiedLoadRule
from mpi_coded.coded.shuffle import UnicastBook, deficit_unicasts
from mpi_coded.codes import work
from mpi_coded.errors import ConfigError, NotDecodable, PluginError, require
from mpi_coded.faults import (
    FAULTS,
    PHASES,
    Answer,
    Fault,
    FaultContext,
    FaultMode,
    corrupt_entry,
    number,
    phase_at,
)
from mpi_coded.fields import Field
from mpi_coded.registry import Registry

API_VERSION = "1.1"
"""``MAJOR.MINOR`` of this module (module docstring, "Stability")."""

HOOK = "mpi_coded_register"
"""The name of the one function a plugin defines."""


class Registrar(Protocol):
    """What the hook is given: one method per kind, each checking its item against the
    rules of the kind and registering it under its ``name`` (returned, for chaining)."""

    def scheme(self, scheme: Scheme) -> Scheme: ...

    def policy(self, policy: ElasticPolicy) -> ElasticPolicy: ...

    def workload(self, workload: Workload) -> Workload: ...

    def fault(self, fault: FaultMode) -> FaultMode: ...


Hook = Callable[[Registrar], None]
"""The type of ``mpi_coded_register``."""

KINDS = ("scheme", "policy", "workload", "fault")
"""The kinds a plugin can register."""


def registered(kind: str, name: str) -> Scheme | ElasticPolicy | Workload | FaultMode:
    """The registered ``kind`` (one of :data:`KINDS`) called ``name``, the package's or a
    plugin's (ConfigError naming ``kind`` and listing the names if there is none), e.g. a
    built-in policy to compare with: ``registered("policy", "heterogeneous")``."""
    registries: dict[str, Registry[Any]] = {"scheme": REGISTRY, "policy": POLICIES,
                                            "workload": WORKLOADS, "fault": FAULTS}
    require(kind in registries, "kind", f"must be one of {', '.join(KINDS)}", kind)
    found: Scheme | ElasticPolicy | Workload | FaultMode = registries[kind].lookup(name, kind)
    return found

__all__ = [
    # the hook
    "API_VERSION", "HOOK", "Hook", "KINDS", "Registrar", "registered",
    # errors
    "ConfigError", "NotDecodable", "PluginError", "require",
    # schemes (coded job)
    "Scheme", "BatchLayout", "MDS_CODE", "UnifiedLoadRule", "DenseTerms", "CodedParams",
    "CodeShape", "Code", "CodeLayout", "CodeWork", "PartitionCode", "CopyCode",
    "CopyCodeRules", "Placement", "UnicastBook", "deficit_unicasts", "partitions_covered",
    "UnifiedLoad", "DelayCosts", "Ops", "mixture_order_mean", "Field", "work",
    # elastic policies
    "ElasticPolicy", "Assignment", "StepPlan", "RowSet", "filled_sets", "plan_violation",
    # workloads
    "Workload", "FloatIterative", "Iterate", "Product", "StepValues", "REFERENCE_RTOL",
    "relative_error", "start_vector",
    # fault modes
    "FaultMode", "Fault", "FaultContext", "PHASES", "phase_at", "number", "Answer",
    "corrupt_entry",
]
