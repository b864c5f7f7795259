"""A policy's products, in phases: what the job's step loop asks of the coded policies and
of the uncoded baseline alike.

Each product ``X w`` of a step (linreg: also ``X^T z``) goes through the phases
``plan`` (who computes which rows), ``order`` (orders and ``w`` out), ``collect``
(answers in), ``decode`` (``y`` from the answers) and ``record`` (the step's
:class:`~mpi_coded.results.ElasticStep`).  :class:`Steps` is the interface and
the record fields every policy fills the same way (:meth:`Steps.step_record`);
:class:`~mpi_coded.runtime.cec.coded_steps.CodedSteps` and
:class:`~mpi_coded.runtime.cec.uncoded_steps.UncodedSteps` are the two policies.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from mpi_coded.analysis.network import Traffic
from mpi_coded.cec.locate import WrongAnswer
from mpi_coded.cec.policy import ElasticPolicy
from mpi_coded.errors import ConfigError
from mpi_coded.results import ElasticStep
from mpi_coded.runtime.cec.cluster import MachinePool, measured
from mpi_coded.runtime.cec.stores import MachineStore


@dataclass(frozen=True)
class DataSent:
    """What a policy's setup sent: bytes in all, per machine, a line for stdout, and its
    messages as the network model counts them."""

    nbytes: int
    per_machine: int
    what: str
    traffic: Traffic | None = None


@dataclass(frozen=True)
class Clock:
    """A product's ``perf_counter`` readings: orders out, answers in, decoded."""

    start: float
    collected: float
    decoded: float


class Steps:
    """A policy's products (module docstring); subclasses implement the phases and name
    the machines' side (:attr:`store`)."""

    store: type[MachineStore] = MachineStore
    """What the machines store, and how (:mod:`mpi_coded.runtime.cec.stores`)."""

    def __init__(self, cl: MachinePool, x: Any) -> None:
        """``x``: ``X`` itself, or the master's view of it from a store (streamed from its
        file, or a sketch: :mod:`mpi_coded.store.sketch`)."""
        self.cl, self.cfg, self.field, self.x = cl, cl.cfg, cl.field, x

    def send_block(self, n: int) -> int:
        """A machine spawned to replace the lost machine ``n``: send what :meth:`setup` sent
        ``n``, take its READY; the bytes sent."""
        raise NotImplementedError(f"{type(self).__name__} cannot take in a new machine")

    def setup(self, env: list[int]) -> DataSent:
        """Send the machines their data, once, with the READY handshake (``env``: the first
        step's available machines)."""
        raise NotImplementedError

    def replay(self, envs: list[list[int]]) -> None:
        """Resume: the available sets of the steps already run, in order."""

    def begin(self, t: int, env: list[int]) -> list[int]:
        """Step ``t`` starts with ``env`` available: the machines its first product uses."""
        return env

    def product(self, t: int, which: int, w: np.ndarray, avail: list[int]
                ) -> tuple[ElasticStep, np.ndarray]:
        """Product ``which`` (0: ``X w``, 1: ``X^T w``) of step ``t`` on ``avail``: its
        record and the decoded ``y``."""
        raise NotImplementedError

    def decoder_cache(self) -> dict[str, int]:
        return {"hits": 0, "misses": 0}

    def late_wrong(self) -> list[WrongAnswer]:
        """Late answers found wrong and in no step's record yet (docs/theory.md A.10):
        none for a policy that keeps no verified product to check them against."""
        return []

    def step_record(self, t: int, env: list[int], clock: Clock, metas: dict[int, dict[str, float]],
               err: float, speeds: dict[int, Fraction], oracle_s: float, true_s: float,
               **own: Any) -> ElasticStep:
        """The step record: the fields every policy fills alike, and the policy's ``own``
        (its plan, prediction, traffic and reliability fields)."""
        cl = self.cl
        return ElasticStep(
            step=t, policy=self.cfg.policy, field=self.field.name,
            preempted=cl.preempted(env), wall_s=clock.decoded - clock.start,
            collect_s=clock.collected - clock.start, decode_s=clock.decoded - clock.collected,
            **measured(metas), max_error=err, verified=self.field.verified(err),
            stragglers=cl.stragglers(t, env), speed_estimates=cl.speed_estimates(speeds),
            oracle_time_s=oracle_s, true_time_s=true_s,
            true_over_oracle=true_s / oracle_s if oracle_s > 0 else None,
            workload=self.cfg.workload, lost=cl.lost_in(t), joined=cl.joined_in(t),
            stand_ins=list(cl.stand_ins),
            **own)

    def check(self, y: np.ndarray, x: Any, w: np.ndarray) -> Any:
        """The decoded ``y``'s largest error against the direct ``x @ w`` (a matrix the
        master knows from a store checks itself: streamed, or Freivalds' sketch)."""
        own = getattr(x, "error", None)
        if own is not None:
            return own(y, w)
        return self.field.max_error(y, self.field.matmul(x, w))


def steps_for(policy: ElasticPolicy) -> type[Steps]:
    """The runtime phases the policy names (:attr:`ElasticPolicy.steps`, ``module:Class``);
    ConfigError (``policy``) when that is no :class:`Steps` class.  Every rank calls it
    before any MPI traffic."""
    found: object = policy.steps
    if isinstance(found, str):
        mod, _, name = found.partition(":")
        try:
            found = getattr(importlib.import_module(mod), name)
        except Exception as exc:  # a plugin module's own import failure, whatever it is
            raise ConfigError("policy", f"{policy.name}: its steps {policy.steps!r} cannot "
                              f"be imported ({type(exc).__name__}: {exc})") from None
    if not (isinstance(found, type) and issubclass(found, Steps)):
        raise ConfigError("policy", f"{policy.name}: its steps {policy.steps!r} must name a "
                          "subclass of mpi_coded.runtime.cec.steps.Steps")
    return found
