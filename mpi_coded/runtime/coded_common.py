"""What the master and every server of the coded job build identically.

Every rank derives the same placement, code and data from the job and its
seed (SPEC B.1: the servers know ``A``, ``Psi`` and ``x_1..x_N`` at the start),
so nothing but phase orders, map-end decisions, shuffle payloads and decoded
outputs crosses the wire.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpi_coded.coded.codes import Code, build_code
from mpi_coded.coded.job import CodedJob
from mpi_coded.coded.placement import Placement, build_placement
from mpi_coded.fields import Field, get_field


@dataclass
class Setup:
    job: CodedJob
    field: Field
    placement: Placement
    code: Code
    A: np.ndarray  # m x n
    X: np.ndarray  # n x N: the vectors x_1..x_N as columns


def build_setup(job: CodedJob) -> Setup:
    p = job.params
    field = get_field(p.field_name)
    placement = build_placement(p, job.load_assignment())
    code = build_code(p, field)
    rng = np.random.default_rng([job.seed, 0xA])
    A = field.random((p.m, p.n), rng)
    X = field.random((p.n, p.N), rng)
    return Setup(job, field, placement, code, A, X)


def encode_map_end(Q: tuple[int, ...], extra: tuple[int, ...]) -> np.ndarray:
    """MAP_END payload: ``[Q..., -1, extra...]``."""
    return np.array([*Q, -1, *extra], dtype=np.int64)


def decode_map_end(arr: np.ndarray) -> tuple[tuple[int, ...], tuple[int, ...]]:
    vals = [int(x) for x in arr]
    cut = vals.index(-1)
    return tuple(vals[:cut]), tuple(vals[cut + 1:])
