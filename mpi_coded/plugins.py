"""Plugins: a researcher's own coded scheme, elastic policy or workload, from outside the
package.

A plugin is a Python module or ``.py`` file that defines one hook::

    def mpi_coded_register(registry):       # registry: PluginRegistry
        registry.scheme(MY_SCHEME)          # a mpi_coded.coded.schemes.base.Scheme
        registry.policy(MY_POLICY)          # a mpi_coded.cec.policy.ElasticPolicy
        registry.workload(MY_WORKLOAD)      # a mpi_coded.cec.workloads.Workload
        registry.fault(MY_FAULT_MODE)       # a mpi_coded.faults.FaultMode

(All of them, typed: the public module :mod:`mpi_coded.plugin`.)

It is found two ways, as pytest finds its plugins:

* ``mpi-coded --plugin PATH_OR_MODULE ...`` (repeatable; a global option, before the
  subcommand), or the ``MPI_CODED_PLUGINS`` environment variable (paths or modules
  separated by ``os.pathsep``: mpiexec passes it to every rank, and the sweeps and benches
  to every job they start);
* the entry-point group :data:`ENTRY_POINT_GROUP` (``mpi_coded.plugins``) of any
  installed distribution: each entry point names a plugin module (or its hook).

Every rank loads the same plugins before the command line is parsed, so a plugin's names
are choices of ``run``, ``plan``, ``load`` and ``model``, and of ``mpi-coded report``.  What
a plugin registers is held to the rules of its kind first (:func:`check_scheme`,
:func:`check_policy`, :func:`check_workload`); one that breaks a rule, or a plugin that
cannot be imported, is one line naming the plugin and the rule (``--plugin`` ``ConfigError``,
exit 2) before MPI starts.  The registries are imported only when a plugin is loaded, so
a command with no plugin starts as fast as before.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from mpi_coded.cec.plan import POLICIES
from mpi_coded.cec.policy import CODED_STEPS, ElasticPolicy, plan_violation
from mpi_coded.cec.workloads import WORKLOADS, Workload
from mpi_coded.errors import ConfigError
from mpi_coded.faults import FAULTS, PHASES, FaultMode
from mpi_coded.registry import HookRegistrar

if TYPE_CHECKING:
    from mpi_coded.coded.schemes.base import Scheme

HOOK = "mpi_coded_register"
"""The one function a plugin defines: ``mpi_coded_register(registry)``."""
ENTRY_POINT_GROUP = "mpi_coded.plugins"
"""The entry-point group installed plugins declare, e.g. in their pyproject.toml:
``[project.entry-points."mpi_coded.plugins"] mine = "my_package.plugin"``."""
ENV = "MPI_CODED_PLUGINS"
"""Plugins every rank and every job started by the sweeps and benches loads."""
ARG = "--plugin"

_loaded: dict[str, str] = {}
"""Plugins loaded in this process: key (resolved path or module) -> how it was named."""

WORKED_SPEEDS = {1: Fraction(1), 2: Fraction(1), 3: Fraction(3, 2), 4: Fraction(3, 2),
                 5: Fraction(2), 6: Fraction(2)}
"""The worked example of the heterogeneous CEC paper (docs/theory.md (A.4)): a policy is
checked on its available sets, with and without stragglers, in fractions and in rows."""
WORKED_AVAILABLE = ((1, 2, 3, 4, 5, 6), (1, 2, 3, 5, 6), (1, 2, 3, 5), (2, 3, 5))


def fail(plugin: str, rule: str) -> ConfigError:
    """The one message shape: ``--plugin: <plugin>: <rule>``."""
    return ConfigError(ARG, f"{plugin}: {rule}")


REFERENCE_SETTINGS = ((6, 4, Fraction(1, 2)), (6, 3, Fraction(1, 3)), (6, 2, Fraction(1, 2)),
                      (6, 6, Fraction(1, 6)), (12, 4, Fraction(1, 4)))
"""``(K, q, mu)`` settings a scheme's loads are checked at (those it accepts; at least one)."""


SECOND_FORMS = (("loads", "literal", "its load rule's literal()"),
                ("delay", "load", "its delay terms' load()"))
"""Where a plugin written before the load was declared once gave it again: such a second
form must agree with :meth:`Scheme.load` (it is never used)."""


def _second_forms(scheme: Any, K: int, q: int, mu: Fraction) -> dict[str, object]:
    # deferred: the coded parameters and the loads, only for a plugin's coded scheme
    from mpi_coded.coded.params import CodedParams

    out: dict[str, object] = {}
    for part, hook, what in SECOND_FORMS:
        if callable(fn := getattr(getattr(scheme, part), hook, None)):
            try:
                out[what] = (fn(K, q, mu, scheme.reference_load(K, q, mu)) if hook == "literal"
                             else fn(CodedParams(scheme, K, q, mu, K * q, 1, q)))
            except ConfigError:
                continue  # not at this size
    return out


def check_scheme(scheme: object, plugin: str) -> None:
    """A scheme is a :class:`Scheme` whose load (:meth:`Scheme.load`) is exact fractions at
    the reference settings it accepts (:data:`REFERENCE_SETTINGS`, docs/theory.md (B.3)),
    and any second form of it (:data:`SECOND_FORMS`) says the same; one with a closed-form
    load must accept at least one."""
    # deferred: the coded schemes, off an elastic rank's path (its start)
    from mpi_coded.coded.schemes.base import Scheme

    if not isinstance(scheme, Scheme):
        raise fail(plugin, f"registry.scheme() takes a mpi_coded Scheme, not {scheme!r}")
    checked = 0
    for K, q, mu in REFERENCE_SETTINGS:
        try:
            ld = scheme.load(K, q, mu) if scheme.closed_form_load else None
        except ConfigError:
            continue  # it does not run at this setting
        checked += 1
        loads = [] if ld is None else [ld.load, ld.multicast, ld.unicast, *ld.B]
        bad = [v for v in loads if not isinstance(v, (Fraction, int)) or isinstance(v, bool)]
        if bad:
            raise fail(plugin, f"scheme {scheme.name!r}: its loads must be exact fractions "
                       f"(fractions.Fraction), not {bad[0]!r} (K={K}, q={q}, mu={mu})")
        for what, v in (_second_forms(scheme, K, q, mu) if loads else {}).items():
            if v != loads[0]:
                raise fail(plugin, f"scheme {scheme.name!r} declares load {loads[0]} (its "
                           f"load rule) but {what} says {v} (K={K}, q={q}, mu={mu}): the load "
                           "is declared once, by the load rule; remove the other")
    if not checked and scheme.closed_form_load:  # (bdc: no load formula at all)
        raise fail(plugin, f"scheme {scheme.name!r} accepts none of the reference settings "
                   "(K, q, mu) = " + ", ".join(f"({K}, {q}, {mu})"
                                               for K, q, mu in REFERENCE_SETTINGS))


def check_policy(policy: object, plugin: str) -> None:
    """A policy is an :class:`ElasticPolicy` whose plans of the worked example obey the
    rule of every plan (:func:`mpi_coded.cec.policy.plan_violation`): every row on
    ``L + S`` distinct available machines, loads the sizes of their sets."""
    if not isinstance(policy, ElasticPolicy):
        raise fail(plugin, f"registry.policy() takes a mpi_coded ElasticPolicy, not "
                   f"{policy!r}")
    if not policy.plans_row_sets:
        if policy.steps == CODED_STEPS:  # the coded phases execute row sets
            raise fail(plugin, f"policy {policy.name!r} plans no row sets "
                       "(plans_row_sets=False): it must bring its own runtime phases "
                       "(steps=, a subclass of mpi_coded.runtime.cec.steps.Steps)")
        return
    for S in (0, 1):
        for rows in (None, 420):
            prev = None
            for avail in WORKED_AVAILABLE:
                s = min(S, len(avail) - 3)  # as the job does when fewer are left
                try:
                    plan = policy.plan(WORKED_SPEEDS, 3, avail, rows=rows, S=s, prev=prev)
                except Exception as exc:  # its own failure, whatever it is
                    raise fail(plugin, f"policy {policy.name!r} cannot plan the worked "
                               f"example (L=3, S={s}, available {list(avail)}): "
                               f"{type(exc).__name__}: {exc}") from None
                why = plan_violation(plan)
                if why is not None:
                    raise fail(plugin, f"policy {policy.name!r}: {why} (worked example, "
                               f"L=3, S={s}, available {list(avail)}, rows {rows})")
                prev = plan


def check_workload(workload: object, plugin: str) -> None:
    """A workload is a :class:`Workload` of one or two products a step."""
    if not isinstance(workload, Workload):
        raise fail(plugin, f"registry.workload() takes a mpi_coded Workload, not "
                   f"{workload!r}")
    if workload.products not in (1, 2):
        raise fail(plugin, f"workload {workload.name!r}: products must be 1 (X w) or 2 "
                   f"(X w, X^T z), not {workload.products!r}")


def check_fault(mode: object, plugin: str) -> None:
    """A fault mode is a :class:`~mpi_coded.faults.FaultMode` with a name, a usage and
    jobs among ``cec``, ``coded``."""
    if not isinstance(mode, FaultMode):
        raise fail(plugin, f"registry.fault() takes a mpi_coded FaultMode, not {mode!r}")
    if not mode.name or ":" in mode.name or not mode.usage.startswith(mode.name + ":"):
        raise fail(plugin, f"fault mode {mode.name!r}: needs a name without ':' and a usage "
                   "that starts with it (NAME:RANK:...)")
    if not mode.jobs or any(j not in PHASES for j in mode.jobs):
        raise fail(plugin, f"fault mode {mode.name!r}: jobs must be among "
                   f"{', '.join(PHASES)}, not {mode.jobs!r}")


class PluginRegistry(HookRegistrar):
    """What a plugin's hook is given (the typed view: :class:`mpi_coded.plugin.Registrar`):
    it holds each object to the rules of its kind, then registers it under the plugin's
    name (:meth:`mpi_coded.registry.Registry.origin`)."""

    def __init__(self, plugin: str) -> None:
        super().__init__(plugin, {})
        self.plugin = plugin

    def _add(self, registry: Any, item: Any) -> Any:
        self.registries[registry.kind] = registry
        try:
            return self.add(registry.kind, item)
        except ValueError as exc:
            raise fail(self.plugin, str(exc)) from None

    def scheme(self, scheme: Scheme) -> Scheme:
        # deferred: the coded schemes, off an elastic rank's path (its start)
        from mpi_coded.coded.schemes import REGISTRY

        check_scheme(scheme, self.plugin)
        return self._add(REGISTRY, scheme)

    def policy(self, policy: ElasticPolicy) -> ElasticPolicy:
        check_policy(policy, self.plugin)
        return self._add(POLICIES, policy)

    def workload(self, workload: Workload) -> Workload:
        check_workload(workload, self.plugin)
        return self._add(WORKLOADS, workload)

    def fault(self, fault: FaultMode) -> FaultMode:
        check_fault(fault, self.plugin)
        return self._add(FAULTS, fault)


def _import(spec: str) -> ModuleType:
    """The plugin module named by ``spec``: a ``.py`` file, or an importable module."""
    path = Path(spec)
    try:
        if spec.endswith(".py") or path.is_file():
            if not path.is_file():
                raise fail(spec, "no such plugin file")
            name = "mpi_coded_plugin_" + "".join(c if c.isalnum() else "_"
                                                 for c in str(path.resolve()))
            found = importlib.util.spec_from_file_location(name, path)
            if found is None or found.loader is None:
                raise fail(spec, "is not a Python file")
            module = importlib.util.module_from_spec(found)
            sys.modules[name] = module
            found.loader.exec_module(module)
            return module
        return importlib.import_module(spec)
    except ConfigError:
        raise
    except Exception as exc:  # a plugin's own import failure, whatever it is
        raise fail(spec, f"cannot be imported ({type(exc).__name__}: {exc})") from None


def canonical(spec: str) -> str:
    """One name per plugin: a file as its absolute path, a module as named."""
    p = Path(spec)
    return str(p.resolve()) if spec.endswith(".py") or p.is_file() else spec


def register_with(hook: Callable[[PluginRegistry], object], plugin: str) -> PluginRegistry:
    """Call a plugin's hook with a fresh :class:`PluginRegistry`."""
    reg = PluginRegistry(plugin)
    try:
        hook(reg)
    except ConfigError:
        raise
    except Exception as exc:
        raise fail(plugin, f"its {HOOK}() failed ({type(exc).__name__}: {exc})") from None
    return reg


def load_plugin(spec: str) -> PluginRegistry | None:
    """Import the plugin ``spec`` and run its hook (once per process; None if it was
    loaded already)."""
    key = canonical(spec)
    if key in _loaded:
        return None
    module = _import(spec)
    hook = getattr(module, HOOK, None)
    if not callable(hook):
        raise fail(spec, f"must define {HOOK}(registry)")
    _loaded[key] = spec
    return register_with(hook, spec)


def load_entry_points(group: str = ENTRY_POINT_GROUP) -> list[PluginRegistry]:
    """Every installed plugin of the entry-point group (module or hook)."""
    out = []
    for ep in metadata.entry_points(group=group):
        name = f"{ep.name} = {ep.value} (entry point)"
        if ep.value in _loaded or ep.value.partition(":")[0].strip() in _loaded:
            continue
        try:
            obj = ep.load()
        except Exception as exc:
            raise fail(name, f"cannot be imported ({type(exc).__name__}: {exc})") from None
        hook = getattr(obj, HOOK, obj)
        if not callable(hook):
            raise fail(name, f"must name a module defining {HOOK}(registry), or that hook")
        _loaded[ep.value] = name
        out.append(register_with(hook, name))
    return out


def env_plugins(environ: Any = os.environ) -> list[str]:
    """The plugins named in :data:`ENV`."""
    return [s for s in str(environ.get(ENV, "")).split(os.pathsep) if s.strip()]


def split_plugin_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(plugins, the other arguments)``: the leading ``--plugin X`` / ``--plugin=X``
    options (global options, before the subcommand) taken out of ``argv``.  Everything from
    the first other argument on is left alone: a ``--plugin`` there belongs to a command
    given as an argument (``cluster run -- mpiexec ... mpi-coded --plugin X ...``)."""
    plugins: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == ARG:
            if i + 1 >= len(argv):
                raise ConfigError(ARG, "needs a path to a .py file or a module name")
            plugins.append(argv[i + 1])
            i += 2
        elif a.startswith(ARG + "="):
            plugins.append(a[len(ARG) + 1:])
            i += 1
        else:
            break
    return plugins, list(argv[i:])


def load_all(specs: Iterable[str] = (), environ: Any = os.environ) -> list[str]:
    """Load the entry points, :data:`ENV`'s plugins and ``specs``, in that order; the
    plugins loaded (as named)."""
    load_entry_points()
    for spec in [*env_plugins(environ), *specs]:
        load_plugin(spec)
    return list(_loaded.values())


def loaded() -> list[str]:
    """The plugins loaded in this process, as named."""
    return list(_loaded.values())
