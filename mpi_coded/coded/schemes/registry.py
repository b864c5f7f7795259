"""The scheme registry: the one place a scheme becomes known by name.

A :class:`~mpi_coded.coded.schemes.base.Scheme` is a plain value; building one
registers nothing.  :data:`REGISTRY` (a :class:`mpi_coded.registry.Registry`) holds the
schemes the command line, the results and the error messages know;
:mod:`mpi_coded.coded.schemes` registers the built-in ones when it is imported, and a
plugin (:mod:`mpi_coded.plugins`) its own.  Anything else is registered explicitly and,
in a test, only for the test's duration::

    with REGISTRY.registered(Scheme("toy", "a toy")) as toy:
        assert get("toy") is toy
    assert "toy" not in REGISTRY
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mpi_coded.registry import Registry

if TYPE_CHECKING:
    from mpi_coded.coded.schemes.base import Scheme

REGISTRY: Registry[Scheme] = Registry("scheme")
"""The schemes known by name (the built-in ones from :mod:`mpi_coded.coded.schemes`)."""
