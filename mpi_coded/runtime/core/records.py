"""Named statistics records: what a worker reports, by name, not by position.

A record travels as one float64 array; its field names are declared once here
and both ends pack and unpack through them, so adding a statistic is one name
in one tuple.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpi_coded.runtime.core.wire import WireError


@dataclass(frozen=True)
class StatsLayout:
    """A named layout of a float64 statistics array."""

    name: str
    fields: tuple[str, ...]

    def pack(self, **values: float) -> np.ndarray:
        """The array for ``values`` (every field, nothing else)."""
        if set(values) != set(self.fields):
            raise ValueError(f"{self.name}: fields {sorted(values)} != {sorted(self.fields)}")
        return np.array([float(values[f]) for f in self.fields], dtype=np.float64)

    def unpack(self, arr: np.ndarray | None, source: int) -> dict[str, float]:
        """The values of a received array; a wrong shape is a wire error naming the rank."""
        if arr is None or arr.shape != (len(self.fields),):
            shape = None if arr is None else arr.shape
            raise WireError(f"{self.name} record from rank {source} has shape {shape}, "
                            f"expected ({len(self.fields)},)")
        return {f: float(v) for f, v in zip(self.fields, arr)}


LINK = ("link_sent0", "link_received0", "link_sent1", "link_received1")
"""A worker's link counters (:mod:`mpi_coded.runtime.core.linkstats`) at the start and the
end of what its record reports, bytes sent and received; -1 where unreadable."""
MOVED = ("link_sent_moved", "link_received_moved")
"""The uncoded elastic baseline: a machine's link counters when its moves were done."""

# elastic job
TASK_META = StatsLayout("task meta", ("compute_s", "sleep_s", "target_s", "rows", "busy_s",
                                 "rows_planned", "cut", "speed", *LINK, *MOVED))
IDLE_STATS = StatsLayout("idle stats", ("wall_s", "cpu_s", "idle_steps"))

# coded job
ENCODE_DONE = StatsLayout("encode stats", ("encode_s",))
MAP_DONE = StatsLayout("map stats", ("compute_s", "wall_s", "target_s", "rows_done", "rows",
                                "stopped"))
SHUFFLE_DONE = StatsLayout("shuffle stats", ("shuffle_s", "multicast_values", "unicast_values",
                                        "bytes_sent", "plan_s"))
REDUCE_DONE = StatsLayout("reduce stats", ("decode_s",))
