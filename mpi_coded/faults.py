"""Fault injection (``--fault``): fault modes as objects in a registry, parsed and checked
without MPI.

Built-in modes (repeatable on ``mpi-coded run``)::

    kill:RANK:PHASE[@STEP]            the rank dies (SIGKILL) when it enters PHASE
    stall:RANK:PHASE[@STEP]:SECONDS   the rank sleeps SECONDS when it enters PHASE
    slow:RANK:FACTOR                  the rank's throttled work takes FACTOR times longer
    garble:RANK:PHASE[@STEP]          the rank sends the master a malformed message
    drift:RANK:STEP:FACTOR            elastic job: from step STEP on, the rank's throttle
                                      speed is multiplied by FACTOR (> 0; < 1 slows it)
    corrupt:RANK:answer[@STEP][:P]    elastic job: the rank's answer (its product of a row
                                      set) has one entry changed, well-formed and wrong:
                                      at STEP (or its first answer), or with probability P
                                      at every answer (a mercurial machine)
    corrupt:RANK:map[@STEP][:P]       coded job: one entry of the server's map output (its
                                      computed coded-row products) changed, at repetition
                                      STEP or with probability P at every repetition
    corrupt:RANK:shuffle[@STEP][:P]   coded job: one entry of one multicast or unicast
                                      payload the server sends changed
    lie:RANK[:STEP]                   elastic job: from step STEP (default 1) on, the rank
                                      answers for a wrong ``w`` (one entry changed): every
                                      answer a consistent product of the wrong vector;
                                      coded job: from repetition STEP (default 0) on, the
                                      server maps its coded rows with wrong input vectors

Phases are named as in the results: ``setup``, ``step`` (elastic job; and ``idle``: the
machine is told to idle, ``answer``: its product is computed, before it is sent),
``encode``, ``map``, ``shuffle``, ``reduce`` (coded job).  ``@STEP`` picks the
step (elastic) or repetition (coded) at which a fault fires; without it the
fault fires the first time the rank enters the phase.  Rank 0 is the master,
which takes no faults.

A mode is a :class:`FaultMode` registered in :data:`FAULTS` (a plugin's
``registry.fault(...)``): it parses its spec's fields (:meth:`FaultMode.parse`), may
check them against the job (:meth:`FaultMode.check`), and acts through up to three
hooks: :meth:`FaultMode.fire` when the rank enters the fault's phase (given a
:class:`FaultContext`: the rank, its host, where it is, and the runtime's
``send_garbled``; in the ``answer`` phase also the :class:`Answer` about to be sent, which
a lying mode changes in place; in the coded job's ``map`` and ``shuffle`` phases the
:class:`Answer` is the server's map output or the payloads it is about to send, given in a
second call after the phase's work, to the modes that :attr:`FaultMode.needs_answer`
only), :meth:`FaultMode.time_factor` (its throttled work takes
longer) and :meth:`FaultMode.speed_factor` (its speed from a step on).  A mode whose
:meth:`FaultMode.active` holds at more than one answer (:meth:`FaultMode.repeats`) fires
each time.  The runtime asks the mode, never its name.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from mpi_coded.coded.phases import PHASES as CODED_PHASES
from mpi_coded.errors import ConfigError, require
from mpi_coded.registry import HookRegistrar, Registry

PHASES = {"cec": ("setup", "step", "idle", "answer"), "coded": ("setup", *CODED_PHASES)}
"""The phases a fault can fire in, by job."""
ARG = "--fault"


@dataclass(frozen=True)
class Fault:
    """One parsed ``--fault``: its mode's name (``kind``), the worker ``rank`` it hits, the
    ``phase`` and ``step`` it fires at (``step`` None: the first time), and the mode's
    numbers (``seconds``, ``factor``)."""

    kind: str
    rank: int
    phase: str = ""
    step: int | None = None
    seconds: float = 0.0
    factor: float = 1.0
    p: float | None = None  # corrupt: the probability at each answer (None: once)

    def fires(self, rank: int, phase: str, step: int | None) -> bool:
        return (self.rank == rank and self.phase == phase and
                (self.step is None or self.step == step))


@dataclass
class Answer:
    """A machine's computed answer about to be sent (the ``answer`` phase), which a lying
    fault mode may change in place: ``values`` (1-D, writable; float64, or GF(2^l) words
    when ``order`` is ``2^l``), the vector ``w`` it was computed with (the coded map: its
    input vectors, flattened) and ``product(v)``, the same rows times another vector (None
    where the runtime cannot recompute it, e.g. the transposed product of linreg, or a
    shuffle payload), and a generator for the mode's draws."""

    values: np.ndarray
    order: int
    rng: np.random.Generator
    w: np.ndarray | None = None
    product: Callable[[np.ndarray], np.ndarray] | None = None

    @property
    def exact(self) -> bool:
        """GF(2^l) words, not float64."""
        return self.order > 0


def corrupt_entry(ans: Answer) -> int:
    """Change one entry of ``ans.values`` (chosen by ``ans.rng``), well-formed and wrong:
    over GF(2^l) XOR a non-zero symbol; over float64 flip one of the top 8 bits of the
    mantissa (a relative change of 2^-8 to 2^-1; a zero entry becomes the answer's mean
    magnitude, or 1).  Returns the entry's index."""
    v, rng = ans.values, ans.rng
    i = int(rng.integers(v.size))
    if ans.exact:
        v[i] ^= v.dtype.type(int(rng.integers(1, ans.order)))
    elif v[i] == 0:
        mean = float(np.mean(np.abs(v)))
        v[i] = mean if mean > 0 else 1.0
    else:
        bits = v[i: i + 1].view(np.uint64)
        bits ^= np.uint64(1) << np.uint64(51 - int(rng.integers(8)))
    return i


class FaultContext(Protocol):
    """What a firing fault is given by the runtime (no MPI object)."""

    rank: int
    host: str
    where: str
    """``phase PHASE[ STEP]``, for messages."""
    answer: Answer | None
    """In the ``answer`` phase: the answer about to be sent (change it in place to lie)."""

    def send_garbled(self) -> None:
        """Send the master a malformed message (the runtime's wire protocol)."""


def number(text: str, what: str, spec: str) -> float:
    """``text`` as a float; ConfigError naming ``--fault``, ``what`` and ``spec``."""
    try:
        return float(text)
    except ValueError:
        raise ConfigError(ARG, f"{what} must be a number in '{spec}'", text) from None


def integer(text: str, what: str, spec: str) -> int:
    """``text`` as an int; ConfigError naming ``--fault``, ``what`` and ``spec``."""
    try:
        return int(text)
    except ValueError:
        raise ConfigError(ARG, f"{what} must be an integer", spec) from None


def phase_at(text: str, job: str, spec: str) -> tuple[str, int | None]:
    """``PHASE[@STEP]``: the phase (one of :data:`PHASES` of ``job``) and the step."""
    phase, _, at = text.partition("@")
    require(phase in PHASES[job], ARG,
            f"PHASE must be one of {', '.join(PHASES[job])} for the {job} job", spec)
    return phase, (integer(at, "@STEP", spec) if at else None)


class FaultMode:
    """One kind of fault (module docstring): ``name`` (the spec's first field), ``usage``
    (the spec's shape), ``summary`` (help), ``jobs`` it applies to.  Subclass and override
    :meth:`parse` and one or more of the hooks; register with ``registry.fault(mode)``."""

    name = ""
    usage = ""
    summary = ""
    jobs: tuple[str, ...] = ("cec", "coded")
    needs_answer = False
    """The mode acts on an :class:`Answer`: it fires only where the runtime passes one (the
    elastic ``answer`` phase; the coded ``map`` and ``shuffle`` phases after their work),
    never at a phase's entry without one."""

    def parse(self, fields: Sequence[str], rank: int, job: str, spec: str) -> Fault:
        """The fault of ``spec``, whose fields after ``KIND:RANK`` are ``fields`` (default:
        ``PHASE[@STEP]``)."""
        require(len(fields) == 1, ARG, f"must look like {self.usage}", spec)
        phase, step = phase_at(fields[0], job, spec)
        return Fault(self.name, rank, phase, step)

    def check(self, fault: Fault, steps: int) -> None:
        """ConfigError unless ``fault`` fits a job of ``steps`` steps (default: any)."""

    def active(self, fault: Fault, rank: int, phase: str, step: int | None) -> bool:
        """Whether ``fault`` fires when ``rank`` enters ``phase`` at ``step`` (default:
        :meth:`Fault.fires`)."""
        return fault.fires(rank, phase, step)

    def repeats(self, fault: Fault) -> bool:
        """Whether ``fault`` fires every time it is :meth:`active` (default: once)."""
        return False

    def fire(self, fault: Fault, ctx: FaultContext) -> None:
        """What happens when the rank enters the fault's phase (default: nothing)."""

    def time_factor(self, fault: Fault) -> float:
        """How many times longer the rank's throttled work takes (default 1)."""
        return 1.0

    def speed_factor(self, fault: Fault, step: int) -> float:
        """The factor on the rank's throttle speed at ``step`` (default 1)."""
        return 1.0


def say(ctx: FaultContext, what: str) -> None:
    """One stderr line: ``mpi-coded: rank R (host) <what> ... in <where>``."""
    sys.stderr.write(f"mpi-coded: rank {ctx.rank} ({ctx.host}) {what} by fault injection "
                     f"in {ctx.where}" + (f" at unix {time.time():.6f}" if "killed" in what
                                          else "") + "\n")
    sys.stderr.flush()


class Kill(FaultMode):
    name, usage, summary = "kill", "kill:RANK:PHASE[@STEP]", "the rank dies (SIGKILL)"

    def fire(self, fault: Fault, ctx: FaultContext) -> None:
        say(ctx, "killed")
        os.kill(os.getpid(), signal.SIGKILL)


class Stall(FaultMode):
    name, usage = "stall", "stall:RANK:PHASE[@STEP]:SECONDS"
    summary = "the rank sleeps SECONDS"

    def parse(self, fields: Sequence[str], rank: int, job: str, spec: str) -> Fault:
        require(len(fields) == 2, ARG, f"must look like {self.usage}", spec)
        phase, step = phase_at(fields[0], job, spec)
        seconds = number(fields[1], "SECONDS", spec)
        require(seconds >= 0, ARG, "stall SECONDS must be >= 0", spec)
        return Fault(self.name, rank, phase, step, seconds)

    def fire(self, fault: Fault, ctx: FaultContext) -> None:
        say(ctx, f"stalls {fault.seconds:g} s")
        time.sleep(fault.seconds)


class Garble(FaultMode):
    name, usage = "garble", "garble:RANK:PHASE[@STEP]"
    summary = "the rank sends the master a malformed message"

    def fire(self, fault: Fault, ctx: FaultContext) -> None:
        ctx.send_garbled()


class Slow(FaultMode):
    name, usage = "slow", "slow:RANK:FACTOR"
    summary = "the rank's throttled work takes FACTOR times longer"

    def parse(self, fields: Sequence[str], rank: int, job: str, spec: str) -> Fault:
        require(len(fields) == 1, ARG, f"must look like {self.usage}", spec)
        factor = number(fields[0], "FACTOR", spec)
        require(factor >= 1, ARG, "slow FACTOR must be >= 1", spec)
        return Fault(self.name, rank, factor=factor)

    def time_factor(self, fault: Fault) -> float:
        return fault.factor


class Drift(FaultMode):
    name, usage = "drift", "drift:RANK:STEP:FACTOR"
    summary = "from step STEP on the rank's speed is multiplied by FACTOR"
    jobs = ("cec",)

    def parse(self, fields: Sequence[str], rank: int, job: str, spec: str) -> Fault:
        require(len(fields) == 2, ARG, f"must look like {self.usage}", spec)
        at_step = integer(fields[0], "STEP", spec)
        require(at_step >= 1, ARG, "drift STEP must be >= 1", spec)
        factor = number(fields[1], "FACTOR", spec)
        require(factor > 0, ARG, "drift FACTOR must be > 0", spec)
        return Fault(self.name, rank, "step", at_step, factor=factor)

    def check(self, fault: Fault, steps: int) -> None:
        assert fault.step is not None
        require(fault.step <= steps, ARG, f"drift step must be a step of the job (1..{steps})",
                f"drift:{fault.rank}:{fault.step}:{fault.factor:g}")

    def speed_factor(self, fault: Fault, step: int) -> float:
        return fault.factor if fault.step is not None and fault.step <= step else 1.0


CORRUPT_PHASES = {"cec": ("answer",), "coded": ("map", "shuffle")}
"""The phases ``corrupt`` acts in, by job: the elastic machine's answer; the coded
server's map output and the shuffle payloads it sends."""


class Corrupt(FaultMode):
    name, usage = "corrupt", "corrupt:RANK:PHASE[@STEP][:P]"
    summary = ("one entry of the rank's answer (elastic: PHASE answer) or of its map output "
               "or a shuffle payload it sends (coded: PHASE map or shuffle) changed, at "
               "STEP or with probability P")
    jobs = ("cec", "coded")
    needs_answer = True

    def parse(self, fields: Sequence[str], rank: int, job: str, spec: str) -> Fault:
        require(len(fields) in (1, 2), ARG, f"must look like {self.usage}", spec)
        phase, step = phase_at(fields[0], job, spec)
        require(phase in CORRUPT_PHASES[job], ARG, f"corrupt PHASE must be "
                f"{' or '.join(CORRUPT_PHASES[job])} for the {job} job (the "
                + ("machine's computed product)" if job == "cec" else
                   "server's map output or its shuffle payloads)"), spec)
        p = number(fields[1], "P", spec) if len(fields) == 2 else None
        require(p is None or 0 < p <= 1, ARG, "corrupt P must be in (0, 1]", spec)
        return Fault(self.name, rank, phase, step, p=p)

    def repeats(self, fault: Fault) -> bool:
        return fault.p is not None

    def fire(self, fault: Fault, ctx: FaultContext) -> None:
        ans = ctx.answer
        if ans is None or ans.values.size == 0:
            return
        if fault.p is not None and ans.rng.random() >= fault.p:
            return
        i = corrupt_entry(ans)
        say(ctx, f"corrupts entry {i} of its " + ("answer" if fault.phase == "answer" else
                                                 f"{fault.phase} output"))


class Lie(FaultMode):
    name, usage = "lie", "lie:RANK[:STEP]"
    summary = ("from step STEP (coded: repetition) on the rank answers for a wrong w "
               "(elastic: its products; coded: its map output for wrong input vectors), "
               "consistently")
    jobs = ("cec", "coded")
    needs_answer = True
    PHASE = {"cec": "answer", "coded": "map"}
    """The phase whose answer a liar computes for its wrong vector, by job."""

    def __init__(self) -> None:
        self.said: set[Fault] = set()  # one stderr line per fault

    def parse(self, fields: Sequence[str], rank: int, job: str, spec: str) -> Fault:
        require(len(fields) <= 1, ARG, f"must look like {self.usage}", spec)
        first = 1 if job == "cec" else 0  # elastic steps count from 1, repetitions from 0
        at_step = integer(fields[0], "STEP", spec) if fields else first
        require(at_step >= first, ARG, f"lie STEP must be >= {first}", spec)
        return Fault(self.name, rank, self.PHASE[job], at_step)

    def check(self, fault: Fault, steps: int) -> None:
        assert fault.step is not None
        first = 1 if fault.phase == "answer" else 0  # elastic steps, coded repetitions
        require(fault.step <= steps, ARG, "lie STEP must be a step (elastic) or repetition "
                f"(coded) of the job ({first}..{steps})", f"lie:{fault.rank}:{fault.step}")

    def active(self, fault: Fault, rank: int, phase: str, step: int | None) -> bool:
        return (fault.rank == rank and phase == fault.phase and step is not None and
                fault.step is not None and step >= fault.step)

    def repeats(self, fault: Fault) -> bool:
        return True

    def fire(self, fault: Fault, ctx: FaultContext) -> None:
        ans = ctx.answer
        if ans is None or ans.values.size == 0:
            return
        if ans.product is None or ans.w is None or ans.w.size == 0:
            corrupt_entry(ans)  # cannot recompute here: one entry changed instead
            return
        if fault not in self.said:
            self.said.add(fault)
            say(ctx, f"answers for a wrong {'w' if fault.phase == 'answer' else 'x'} from "
                f"{'step' if fault.phase == 'answer' else 'repetition'} {fault.step} on")
        wrong = ans.w.copy()  # the same wrong w at every answer: one entry changed
        j = fault.rank % wrong.size
        if ans.exact:
            wrong[j] ^= wrong.dtype.type(1)
        else:
            wrong[j] += 1.0
        ans.values[:] = ans.product(wrong)


FAULTS: Registry[FaultMode] = Registry("fault")
"""Name -> fault mode, the built-ins' and the plugins'."""


def mpi_coded_register(registry: HookRegistrar) -> None:
    """The package's own fault modes, through the hook a plugin uses."""
    for mode in (Kill(), Stall(), Slow(), Garble(), Drift(), Corrupt(), Lie()):
        registry.fault(mode)


def mode_of(fault: Fault) -> FaultMode:
    """The registered mode of ``fault``."""
    return FAULTS.lookup(fault.kind, ARG)


def parse_fault(spec: str, job: str, world_size: int) -> Fault:
    """One ``--fault`` value for ``job`` (``cec`` or ``coded``) on ``world_size`` ranks."""
    parts = spec.split(":")
    mode = FAULTS.get(parts[0])
    require(mode is not None, ARG, f"kind must be one of {', '.join(FAULTS)}", spec)
    assert mode is not None
    require(job in mode.jobs, ARG, f"{mode.name} is a fault of the "
            f"{' or '.join(mode.jobs)} job", spec)
    require(len(parts) >= 2, ARG, f"must look like {mode.usage}", spec)
    rank = integer(parts[1], "RANK", spec)
    require(1 <= rank < world_size, ARG,
            f"RANK must be a worker rank 1..{world_size - 1} (rank 0 is the master)", spec)
    return mode.parse(parts[2:], rank, job, spec)


def parse_faults(specs: Sequence[str] | None, job: str, world_size: int) -> tuple[Fault, ...]:
    return tuple(parse_fault(s, job, world_size) for s in (specs or ()))


def slow_factor(faults: Sequence[Fault], rank: int) -> float:
    """Product of the time factors of ``rank``'s faults."""
    f = 1.0
    for x in faults:
        if x.rank == rank:
            f *= mode_of(x).time_factor(x)
    return f


def check_steps(faults: Sequence[Fault], steps: int) -> None:
    """ConfigError unless every fault fits a job of ``steps`` steps."""
    for f in faults:
        mode_of(f).check(f, steps)


def drift_factor(faults: Sequence[Fault], rank: int, step: int) -> float:
    """Product of the speed factors of ``rank``'s faults at ``step``."""
    f = 1.0
    for x in faults:
        if x.rank == rank:
            f *= mode_of(x).speed_factor(x, step)
    return f


mpi_coded_register(HookRegistrar("mpi_coded", {"fault": FAULTS}))
