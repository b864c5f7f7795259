"""A registry: the one place a coded scheme, an elastic policy or a workload becomes known
by name.

Each kind has one :class:`Registry` (:data:`mpi_coded.coded.schemes.base.REGISTRY`,
:data:`mpi_coded.cec.policy.POLICIES`, :data:`mpi_coded.cec.workloads.WORKLOADS`).  The
package registers its own objects when their module is imported; a plugin
(:mod:`mpi_coded.plugins`) registers more before the command line is parsed.  Objects are
plain values with a ``name``: building one registers nothing.  In a test, register only
for the test's duration::

    with REGISTRY.registered(Scheme("toy", "a toy")) as toy:
        assert REGISTRY.lookup("toy") is toy
    assert "toy" not in REGISTRY

Every lookup of an unknown name is a :class:`~mpi_coded.errors.ConfigError` naming the
argument and listing the names known, plugins' included.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Generic, Protocol, TypeVar

from mpi_coded.errors import ConfigError


class Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=Named)


class Registry(Mapping[str, T], Generic[T]):
    """Name -> object of one kind (``kind``: "scheme", "policy", "workload"), in
    registration order; ``origin`` of each: "mpi_coded" or the plugin that brought it."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._origin: dict[str, str] = {}

    def __getitem__(self, name: str) -> T:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"<{self.kind} registry {', '.join(self._items)}>"

    def register(self, item: T, origin: str = "mpi_coded") -> T:
        """Add ``item`` under its name (a non-empty name no other item has); returns it."""
        name = item.name
        if not isinstance(name, str) or not name:
            raise ValueError(f"a registered {self.kind} needs a name, not {name!r}")
        if name in self._items:
            raise ValueError(f"a {self.kind} called {name!r} is registered already "
                             f"(from {self._origin[name]})")
        self._items[name] = item
        self._origin[name] = origin
        return item

    def unregister(self, name: str) -> T:
        """Remove the item called ``name``; returns it (KeyError if there is none)."""
        self._origin.pop(name, None)
        return self._items.pop(name)

    def origin(self, name: str) -> str:
        """Where ``name`` came from: "mpi_coded" or a plugin's path or module."""
        return self._origin[name]

    @contextmanager
    def registered(self, item: T, origin: str = "test") -> Iterator[T]:
        """Register ``item`` for the ``with`` block only (removed however it ends)."""
        self.register(item, origin)
        try:
            yield item
        finally:
            if self._items.get(item.name) is item:
                self.unregister(item.name)

    def lookup(self, name: object, key: str | None = None) -> T:
        """The item called ``name``; ConfigError naming ``key`` (default: the kind) if none."""
        item = self._items.get(name) if isinstance(name, str) else None
        if item is None:
            raise ConfigError(key or self.kind, f"must be one of {', '.join(self._items)}",
                              name)
        return item

    def names(self, **flags: object) -> tuple[str, ...]:
        """Names of the items whose attributes match ``flags``, e.g.
        ``names(closed_form_load=True)``."""
        return tuple(n for n, s in self._items.items()
                     if all(getattr(s, k) == v for k, v in flags.items()))



class HookRegistrar:
    """What a ``mpi_coded_register(registry)`` hook is given: one method per kind
    (``scheme``, ``policy``, ``workload``, ``fault``), each adding its item to that kind's
    :class:`Registry` under ``origin``.  The package's own objects come in through the
    same hook a plugin defines (each owning module has one, called with a registrar of its
    kind); a plugin's registrar (:class:`mpi_coded.plugins.PluginRegistry`) first holds
    each item to the rules of its kind.  The typed interface plugins see:
    :class:`mpi_coded.plugin.Registrar`."""

    def __init__(self, origin: str, registries: Mapping[str, Registry[Any]]) -> None:
        self.origin = origin
        self.registries = dict(registries)
        self.added: list[tuple[str, str]] = []
        """``(kind, name)`` of what was registered, in order."""

    def add(self, kind: str, item: Any) -> Any:
        """Register ``item`` as a ``kind`` (ValueError: a name taken, or a kind this
        registrar does not hold)."""
        if kind not in self.registries:
            raise ValueError(f"{self.origin} registers no {kind} here")
        self.registries[kind].register(item, origin=self.origin)
        self.added.append((kind, item.name))
        return item

    def scheme(self, scheme: Any) -> Any:
        return self.add("scheme", scheme)

    def policy(self, policy: Any) -> Any:
        return self.add("policy", policy)

    def workload(self, workload: Any) -> Any:
        return self.add("workload", workload)

    def fault(self, fault: Any) -> Any:
        return self.add("fault", fault)
