"""How ranks wait for messages: the ``wait`` setting of both jobs (pure).

``polite`` backs off with sleeps (oversubscribed nodes), ``busy`` tests in a
loop (one rank per core, lowest latency), ``auto`` picks ``busy`` when the
ranks on a node fit its cores and ``polite`` otherwise.  The runtime applies
it (:mod:`mpi_coded.runtime.core.wait`); this module only names and checks it,
so configs are validated before MPI starts.
"""

from __future__ import annotations

from mpi_coded.errors import require

WAIT_MODES = ("auto", "polite", "busy")


def check_wait(mode: object, key: str = "wait") -> str:
    """``mode`` if it is one of :data:`WAIT_MODES`, else ConfigError naming ``key``."""
    require(isinstance(mode, str) and mode in WAIT_MODES, key,
            f"must be one of {', '.join(WAIT_MODES)}", mode)
    assert isinstance(mode, str)
    return mode


def choose_mode(mode: str, ranks_on_node: int, cores: int) -> str:
    """Resolve ``auto``: ``busy`` if ``ranks_on_node <= cores``, else ``polite``."""
    check_wait(mode)
    if mode != "auto":
        return mode
    return "busy" if ranks_on_node <= cores else "polite"
