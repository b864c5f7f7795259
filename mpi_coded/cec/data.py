"""The elastic job's data: ``X``, the step vectors ``w_t`` and the coded blocks (A.1).

Pure functions of the config, shared by the master and by tests: ``X`` is
split row-wise into ``L`` blocks (zero-padded to ``L * R`` rows) and machine
``n`` stores ``X~_n = sum_l G[n, l] X_l`` (docs/theory.md, A.1).
"""

from __future__ import annotations

import numpy as np

from mpi_coded.cec.config import CECConfig
from mpi_coded.fields import Field


def make_data(cfg: CECConfig, field: Field) -> np.ndarray:
    """``X`` (``rows x cols``): from ``cfg.data`` or generated from ``cfg.seed``."""
    if cfg.data:
        x = np.load(cfg.data, allow_pickle=False)
        if field.exact and (x.min() < 0 or x.max() >= field.order):
            raise ValueError(f"data: entries of X must be in [0, {field.order}) for {field.name}")
        return np.ascontiguousarray(x, dtype=field.dtype)
    return field.random((cfg.rows, cfg.cols), np.random.default_rng([cfg.seed, 1]))


def step_vector(cfg: CECConfig, field: Field, t: int) -> np.ndarray:
    """``w_t``, a pure function of (seed, t) so that a resumed job sees the same vectors."""
    return field.random(cfg.cols, np.random.default_rng([cfg.seed, 2, t]))


def encode_blocks(cfg: CECConfig, field: Field, g: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``(N, R, cols)`` coded blocks ``X~_n`` of the zero-padded ``X`` (A.1)."""
    return encode_matrix(field, g, cfg.L, x)


def encode_matrix(field: Field, g: np.ndarray, L: int, x: np.ndarray) -> np.ndarray:
    """``(N, ceil(q / L), r)`` coded blocks of any ``q x r`` matrix (A.1), e.g. ``X^T``."""
    q, r = x.shape
    R = -(-q // L)
    padded = field.zeros((L * R, r))
    padded[:q] = x
    coded = field.matmul(g, padded.reshape(L, R * r))
    return coded.reshape(g.shape[0], R, r)
