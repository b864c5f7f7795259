"""The registry: the one place a scheme becomes known by name.

A :class:`~mpi_coded.coded.schemes.base.Scheme` is a plain value; building one
registers nothing.  :data:`REGISTRY` holds the schemes the command line, the
results and the error messages know; :mod:`mpi_coded.coded.schemes` registers the
built-in ones when it is imported.  Anything else is registered explicitly and, in
a test, only for the test's duration::

    with REGISTRY.registered(Scheme("toy", "a toy")) as toy:
        assert get("toy") is toy
    assert "toy" not in REGISTRY
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from mpi_coded.errors import ConfigError

if TYPE_CHECKING:
    from mpi_coded.coded.schemes.base import Scheme


class Registry(Mapping[str, "Scheme"]):
    """Scheme name -> scheme object, in registration order."""

    def __init__(self) -> None:
        self._schemes: dict[str, Scheme] = {}

    def __getitem__(self, name: str) -> Scheme:
        return self._schemes[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._schemes)

    def __len__(self) -> int:
        return len(self._schemes)

    def __repr__(self) -> str:
        return f"<registry {', '.join(self._schemes)}>"

    def register(self, scheme: Scheme) -> Scheme:
        """Add ``scheme`` under its name (a non-empty name no other scheme has); returns it."""
        name = scheme.name
        if not isinstance(name, str) or not name:
            raise ValueError(f"a registered scheme needs a name, not {name!r}")
        if name in self._schemes:
            raise ValueError(f"a scheme called {name!r} is registered already")
        self._schemes[name] = scheme
        return scheme

    def unregister(self, name: str) -> Scheme:
        """Remove the scheme called ``name``; returns it (KeyError if there is none)."""
        return self._schemes.pop(name)

    @contextmanager
    def registered(self, scheme: Scheme) -> Iterator[Scheme]:
        """Register ``scheme`` for the ``with`` block only (removed however it ends)."""
        self.register(scheme)
        try:
            yield scheme
        finally:
            if self._schemes.get(scheme.name) is scheme:
                del self._schemes[scheme.name]

    def lookup(self, name: str) -> Scheme:
        """The scheme called ``name``; ConfigError (``scheme``) if there is none."""
        scheme = self._schemes.get(name) if isinstance(name, str) else None
        if scheme is None:
            raise ConfigError("scheme", f"must be one of {', '.join(self._schemes)}", name)
        return scheme

    def names(self, **flags: bool) -> tuple[str, ...]:
        """Names of the schemes whose attributes match ``flags``, e.g.
        ``names(closed_form_load=True)``."""
        return tuple(n for n, s in self._schemes.items()
                     if all(getattr(s, k) == v for k, v in flags.items()))


REGISTRY = Registry()
"""The schemes known by name (the built-in ones from :mod:`mpi_coded.coded.schemes`)."""
