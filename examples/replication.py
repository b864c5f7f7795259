"""Scheme ``rep``: r-fold replication, the classic straggler baseline, as a plugin.

Plain replication (a rate-``1/R`` repetition code) is the baseline of Lee, Lam,
Pedarsani, Papailiopoulos, Ramchandran, "Speeding Up Distributed Machine Learning Using
Codes", IEEE Trans. Inf. Theory 64(3), 2018 (Sec. III).  ``A`` is cut into ``q`` blocks
of ``b = m/q`` rows; server ``k`` stores a plain copy of block ``k mod q``, so each
block has ``R = K/q`` copies (``q`` must divide ``K``; ``--mu`` is only checked: pass
``1/q``).  The map phase ends once every block has a finished copy; the first ``q``
finishers reduce, each receiving by unicast the ``m - b`` values it does not store.
Built on :mod:`mpi_coded.plugin` alone; derivations in examples/README.md::

    (R1) L_rep = 1 - 1/q = 1 - R/K                                  (the load)
    (R2) P(g <= j) = sum_i (-1)^i C(q, i) C(K - i R, j) / C(K, j)   (finishers waited for)
    (R3) E[D_map] = sigma (1 + H_q / R)                             (shifted exponential)

    mpi-coded --plugin examples/replication.py run coded --scheme rep --K 6 --q 3 ...
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from mpi_coded.plugin import (
    BatchLayout,
    CodedParams,
    CodeLayout,
    CodeShape,
    CopyCodeRules,
    DelayCosts,
    DenseTerms,
    Ops,
    Registrar,
    Scheme,
    UnifiedLoad,
    UnifiedLoadRule,
    mixture_order_mean,
    require,
)

NAME = "rep"


def copies(K: int, q: int) -> int:
    """``R = K / q``; ConfigError unless ``q`` (the number of blocks) divides ``K``."""
    require(K % q == 0, "q", f"scheme {NAME}: q (the number of blocks) must divide K = {K}, "
            "so that every block has R = K / q copies", q)
    return K // q


def replication_load(K: int, q: int) -> Fraction:  # (R1)
    copies(K, q)
    return 1 - Fraction(1, q)


def servers_needed_pmf(K: int, q: int) -> dict[int, Fraction]:
    """(R2): ``P(g = j)``, exact."""
    R = copies(K, q)

    def cdf(j: int) -> Fraction:
        return sum((Fraction((-1) ** i * math.comb(q, i) * math.comb(K - i * R, j),
                             math.comb(K, j)) for i in range(q + 1)), Fraction(0))

    pmf = {j: cdf(j) - (cdf(j - 1) if j > 1 else 0) for j in range(1, K + 1)}
    return {j: pr for j, pr in pmf.items() if pr != 0}


def expected_map_factor(K: int, q: int) -> float:
    """(R3): ``E[D_map] / sigma = 1 + H_q / R``."""
    return 1.0 + sum(1.0 / j for j in range(1, q + 1)) / copies(K, q)


class ReplicationLayout(BatchLayout):
    """``K`` batches, batch ``k`` (server ``k`` alone) a copy of block ``k mod q``."""

    def replication(self, q: int, mu: Fraction) -> int:
        return 1  # the copies of a block are distinct batches

    def code_shape(self, p: CodedParams) -> CodeShape:
        return CodeShape(partitions=p.m, code_length=max(1, p.K // p.q), code_dimension=1)

    def code_layout(self, p: CodedParams) -> CodeLayout:
        """Row ``t = u b + i`` of ``A`` has copies ``(u + j q) b + i``, ``j < R``."""
        R, b = p.K // p.q, p.m // p.q
        t = np.arange(p.m, dtype=np.int64)
        coded = (t[:, None] // b + p.q * np.arange(R)[None, :]) * b + t[:, None] % b
        return CodeLayout(m=p.m, r=R * p.m, msg_index=t[:, None].copy(), coded_index=coded)

    def check_model_sizes(self, p: CodedParams) -> None:
        copies(p.K, p.q)
        require(p.m % p.q == 0, "m", f"scheme {NAME}: q = {p.q} blocks must divide m", p.m)


class ReplicationRules(CopyCodeRules):
    def check_job(self, p: CodedParams) -> None:
        copies(p.K, p.q)


class ReplicationLoad(UnifiedLoadRule):
    """The one place the load is declared: the unified formula at ``(K, q, 1/q)``, which
    is (R1); ``mpi-coded load``, ``mpi-coded model`` and every run's check read it."""

    def load(self, reference: UnifiedLoad) -> UnifiedLoad:
        copies(reference.K, reference.q)
        return reference


class ReplicationTerms(DenseTerms):
    """Nothing to encode or decode; the map waits for (R2) finishers, so (R3)."""

    authors_fft_encode = False

    def check_setting(self, p: CodedParams, eps: float | None, c: float,
                      delta: float) -> None:
        copies(p.K, p.q)

    def servers_needed(self, p: CodedParams) -> dict[int, float] | None:
        return {g: float(pr) for g, pr in servers_needed_pmf(p.K, p.q).items()}

    def generator_ops(self, p: CodedParams, costs: DelayCosts) -> Ops:
        return Ops(0.0, 0.0)

    def decode(self, p: CodedParams, costs: DelayCosts) -> tuple[float, str | None]:
        return 0.0, None


SCHEME = Scheme(NAME, "r-fold replication: q blocks, R = K/q plain copies of each",
                layout=ReplicationLayout(),
                code=ReplicationRules(" (rep: every block needs a finished copy)"),
                loads=ReplicationLoad(), delay=ReplicationTerms())


def mpi_coded_register(registry: Registrar) -> None:
    registry.scheme(SCHEME)


if __name__ == "__main__":  # the load and E[D_map]/sigma, (R3) against the mixture of (R2)
    for K, q in ((6, 6), (6, 3), (6, 2), (9, 3), (12, 4)):
        mix = mixture_order_mean({g: float(p) for g, p in servers_needed_pmf(K, q).items()},
                                 K, 1.0)
        print(f"K={K:2d} q={q} R={K // q}: load {replication_load(K, q)}, E[D_map]/sigma = "
              f"{expected_map_factor(K, q):.6f} (mixture {mix:.6f})")
