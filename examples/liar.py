"""Fault mode ``negate``: a lying machine, well-formed and wrong, in one plugin file.

``negate:RANK[:STEP]``: from step STEP (default 1) on, every answer the rank sends is its
product negated, ``-X~_n[rows] w``: a consistent lie of the right shape and type, which no
check of one answer's form reveals.  The master finds it (docs/theory.md A.10): the decoded
product fails its check, the rank is located, decoded around, quarantined, and lost for
the job at its second strike.  Imports only :mod:`mpi_coded.plugin`::

    mpi-coded --plugin examples/liar.py run cec --fault negate:2:3 ...

(A lying mode changes ``ctx.answer.values`` in place in the ``answer`` phase and says
that it fires at every answer: :meth:`FaultMode.active` and :meth:`FaultMode.repeats`.)
"""

from __future__ import annotations

from collections.abc import Sequence

from mpi_coded.plugin import Fault, FaultContext, FaultMode, Registrar, require


class Negate(FaultMode):
    name = "negate"
    usage = "negate:RANK[:STEP]"
    summary = "from step STEP on the rank answers minus its product"
    jobs = ("cec",)

    def parse(self, fields: Sequence[str], rank: int, job: str, spec: str) -> Fault:
        require(len(fields) <= 1 and all(f.isdigit() for f in fields), "--fault",
                f"must look like {self.usage}", spec)
        step = int(fields[0]) if fields else 1
        require(step >= 1, "--fault", "negate STEP must be >= 1", spec)
        return Fault(self.name, rank, "answer", step)

    def active(self, fault: Fault, rank: int, phase: str, step: int | None) -> bool:
        return rank == fault.rank and phase == "answer" and step is not None and \
            fault.step is not None and step >= fault.step

    def repeats(self, fault: Fault) -> bool:
        return True

    def fire(self, fault: Fault, ctx: FaultContext) -> None:
        ans = ctx.answer
        if ans is None:
            return
        if ans.exact:  # GF(2^l): -v = v, so the lie is v + 1 in every entry (XOR 1)
            ans.values ^= ans.values.dtype.type(1)
        else:
            ans.values *= -1.0


def mpi_coded_register(registry: Registrar) -> None:
    registry.fault(Negate())
