"""What a machine's death and a new machine's join cost the elastic job, in the model
(docs/theory.md (A.9)).  Pure: plain numbers, the network model (B.7) for the block.

**A death** (``fault_tolerance = "ulfm"``).  A machine planned in step ``t`` that dies
``a`` seconds into the step's first attempt costs the step

    Delta_death = a + d

on top of the re-planned plan's time (the record's ``predicted_s``): ``d`` is the
detection, from the death to the master knowing (MPI's failure report), and the master
then re-plans at once and the others start the step over.  ``a = 0`` for a death as the
step starts (the config's ``deaths``); ``a`` is at most the planned attempt's time (the
record's ``predicted_planned_s``) for a machine that computed and died before answering.
A machine that dies idle (preempted, or not in the plan) costs the step nothing: nobody
waits for it.  With ``S > 0`` and every row set still able to get ``L`` answers, the step
is not re-planned: nothing either.

**A join.**  The new process for a lost machine, before a step, costs the job

    Delta_join = s + T_net(block)

``s`` the launcher's time to start one process of the job (``MPI_Comm_spawn``: a Python
interpreter, numpy, ``MPI_Init``; a constant of the site, measured), ``T_net(block)`` the
coded block (``R x cols`` values) sent from the master's host to the new machine's,
priced on the network (B.7; 0 between ranks of one host, shared memory).

:class:`EventPrices` holds ``d`` and ``s``; their defaults are this machine's medians
(``scripts/bench_ulfm.py``, docs/elastic.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mpi_coded.analysis import network as nm

DETECTION_S = 0.015
"""``d``: the median from a kill to the master knowing, 20 kills under Open MPI 5 with
``--with-ft ulfm`` on a 2-core machine (14.6 ms; docs/elastic.md)."""
SPAWN_S = 1.5
"""``s``: the median ``MPI_Comm_spawn`` of one process of the job there (1.49 s)."""


@dataclass(frozen=True)
class EventPrices:
    """The model's constants for deaths and joins (module docstring)."""

    detection_s: float = DETECTION_S
    spawn_s: float = SPAWN_S

    def death_s(self, planned: bool, into_attempt_s: float = 0.0) -> float:
        """``Delta_death``: ``a + d`` for a machine planned in the step (``a`` =
        ``into_attempt_s``), 0 for one that was idle."""
        return into_attempt_s + self.detection_s if planned else 0.0

    def join_s(self, block_s: float) -> float:
        """``Delta_join = s + T_net(block)``."""
        return self.spawn_s + block_s


def block_seconds(machine: int, rows: int, cols: int, field: str, net: nm.Network) -> float:
    """``T_net(block)``: machine ``machine``'s coded block (``rows x cols`` values of
    ``field``) from the master (rank 0) to it, priced on ``net`` (B.7)."""
    item = nm.ITEMSIZE[field]
    return nm.phase_seconds(nm.elastic_setup_traffic([machine], [(rows, cols)], item),
                            net).seconds


def planned_deaths(lost: Sequence[Mapping[str, Any]], preempted: Sequence[int],
                   replanned: bool) -> list[int]:
    """The machines of a step's ``lost`` that were planned in it: not ``preempted``, and the
    step ``replanned`` (with ``S > 0`` a death may need no re-plan: no cost)."""
    return [int(e["machine"]) for e in lost
            if replanned and int(e["machine"]) not in set(preempted)]


def step_death_s(lost: Sequence[Mapping[str, Any]], preempted: Sequence[int],
                 replanned: bool, prices: EventPrices) -> float:
    """The model's price of one step's deaths, each as the step starts (``a = 0``): ``d``
    if a planned machine was lost, 0 for idle ones.  Deaths detected together cost one
    detection (the master re-plans once)."""
    return prices.death_s(bool(planned_deaths(lost, preempted, replanned)))
