"""Workload ``logistic``: logistic regression by gradient steps, run by the elastic job.

Labels ``b in {0, 1}^rows`` (seeded), weights ``w`` (``cols``).  The loss and its gradient
(Hosmer and Lemeshow's logistic model; the gradient step of any textbook)::

    f(w)  = sum_i log(1 + exp(x_i . w)) - b_i (x_i . w)
    g(w)  = X^T (sigmoid(X w) - b)                        (two products a step)
    w    <- w - eta g(w),   eta = 4 / ||X||_2^2           (1 / the gradient's Lipschitz
                                                           constant ||X||_2^2 / 4)

Each step is the elastic job's two coded products, ``y = X w`` then ``g = X^T z`` with
``z = sigmoid(y) - b``, decoded by the master; the step reports ``f(w)`` in the
``residual`` column.  At the end the final ``w`` is compared with the same steps in numpy.
Imports only :mod:`mpi_coded.plugin`::

    mpi-coded --plugin examples/logistic.py run cec --config C --workload logistic ...
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mpi_coded.plugin import (
    FloatIterative,
    Iterate,
    Product,
    Registrar,
    StepValues,
    start_vector,
)

Vec = npt.NDArray[np.float64]


def sigmoid(y: Vec) -> Vec:
    out: Vec = 0.5 * (1.0 + np.tanh(0.5 * y))  # = 1 / (1 + exp(-y)), without overflow
    return out


def loss(y: Vec, b: Vec) -> float:
    """``f(w)`` from ``y = X w``."""
    return float(np.sum(np.logaddexp(0.0, y) - b * y))


def labels(rows: int, seed: int) -> Vec:
    return np.random.default_rng([seed, 5]).integers(0, 2, rows).astype(np.float64)


def reference(x: npt.ArrayLike, b: Vec, w0: Vec, eta: float, steps: int) -> Vec:
    """The same ``steps`` gradient steps in numpy on the uncoded ``X``."""
    X = np.asarray(x, dtype=np.float64)
    w: Vec = w0.copy()
    for _ in range(steps):
        w = w - eta * (X.T @ (sigmoid(X @ w) - b))
    return w


@dataclass(frozen=True, eq=False)
class Logistic(FloatIterative):
    """Logistic regression, two products a step (module docstring)."""

    products: int = 2

    def start(self, x: npt.ArrayLike, rows: int, cols: int, seed: int) -> Iterate:
        norm = float(np.linalg.norm(np.asarray(x, dtype=np.float64), 2))
        w0 = start_vector(cols, seed)
        return Iterate(self, w0, w0, labels(rows, seed), 4.0 / (norm * norm))

    def step(self, it: Iterate, fresh: Callable[[], Any], product: Product) -> StepValues:
        y = product(0, it.w)
        g = product(1, sigmoid(y) - it.b)
        it.w = it.w - it.eta * g
        return None, loss(y, it.b)

    def final_check(self, it: Iterate, x: npt.ArrayLike, steps: int
                    ) -> dict[str, Any] | None:
        return self.verdict(it, reference(x, it.b, it.w0, it.eta, steps))


WORKLOAD = Logistic("logistic", "logistic regression by gradient steps (two products)")


def mpi_coded_register(registry: Registrar) -> None:
    registry.workload(WORKLOAD)
