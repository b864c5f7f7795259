"""Iterative workloads on the decoded products ``y_t = X w_t`` (float64 only).

A workload is an object (:class:`Workload`) registered by name in :data:`WORKLOADS`
(the package's three below, and plugins'); it owns its products per step, its iterate
(:meth:`Workload.start`, :meth:`Workload.step`) and its final check against numpy
(:meth:`Workload.final_check`).  The package's own:

* ``"independent"``: every ``w_t`` is drawn afresh (the runtime's own vectors);
  no state is carried between steps.
* ``"power"``: power iteration ``w_{t+1} = y_t / ||y_t||`` with ``y_t = X w_t``
  and the Rayleigh quotient ``w_t . y_t / (w_t . w_t)`` as the eigenvalue
  estimate.  Needs a square ``X`` (``rows == cols``); the honest choice rather
  than iterating on ``X^T X`` behind the user's back.
* ``"linreg"``: gradient descent on ``||X w - b||^2 / 2``.  Each step is two
  products: (i) ``y = decode(X w)``, ``z = y - b`` (:func:`linreg_residual`);
  (ii) ``g = decode(X^T z)``, ``w <- w - eta g`` (:func:`linreg_step`) (coded:
  from coded blocks of ``X^T``; the uncoded baseline: the sum of every machine's
  ``X[a:b]^T z[a:b]`` on the rows it stores).  With
  ``eta = 1 / ||X||_2^2`` (:func:`linreg_eta`, the inverse Lipschitz constant of
  the gradient) the residual norm never increases.

Over GF(2^l) neither norms nor descent mean anything, so ``power`` and
``linreg`` require ``field = "float64"``.

:class:`Iterate` carries the workload's state from step to step for the runtime, whatever
the policy (coded or the uncoded baseline): :meth:`Iterate.step` runs one step
through the policy's products, :meth:`Iterate.check` is the end check.

End check: the runtime's final ``w`` is compared with :func:`reference_power`
or :func:`reference_linreg` run on the uncoded ``X`` with numpy, by
:func:`relative_error` against :data:`REFERENCE_RTOL`.  Decoding one product
costs a relative error about ``1e-16 * cond(G_P)`` (docs/theory.md A.2).  GD
with ``eta <= 1/||X||_2^2`` is non-expansive in a perturbation of ``w`` and a
normalised power step damps all but the dominant direction, so errors grow at
most about linearly in ``T``: perturbing every ``y`` by ``1e-12`` (relative)
for 100 power steps on a random 200 x 200 ``X`` moves the final ``w`` by
``~2e-12``.  ``1e-6`` leaves a wide margin for ill-conditioned ``G_P``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mpi_coded.errors import PluginError, require
from mpi_coded.registry import HookRegistrar, Registry
from mpi_coded.store import checkpoint

REFERENCE_RTOL = 1e-6

Vec = npt.NDArray[np.float64]


def start_vector(cols: int, seed: int) -> Vec:
    """A seeded unit vector of ``cols`` entries: ``w_0`` of power and linreg."""
    require(cols >= 1, "cols", "must be >= 1", cols)
    w = np.random.default_rng([seed, 3]).standard_normal(cols)
    return w / np.linalg.norm(w)


def power_step(w: Vec, y: Vec) -> tuple[Vec, float]:
    """``(y / ||y||, w . y / (w . w))`` from ``w`` and the decoded ``y = X w``."""
    w = np.asarray(w, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    norm = float(np.linalg.norm(y))
    require(norm > 0, "workload", "power iteration needs X w != 0", norm)
    return y / norm, float(w @ y) / float(w @ w)


def linreg_targets(rows: int, seed: int) -> Vec:
    """The seeded targets ``b`` (``rows`` standard normal entries)."""
    require(rows >= 1, "rows", "must be >= 1", rows)
    return np.random.default_rng([seed, 4]).standard_normal(rows)


def linreg_eta(x: npt.ArrayLike) -> float:
    """``1 / ||X||_2^2`` (largest singular value, exact via SVD; a matrix the master knows
    from a store carries ``norm2``, computed when the store was written)."""
    known = getattr(x, "norm2", None)
    s = float(known) if known is not None else \
        float(np.linalg.norm(np.asarray(x, dtype=np.float64), 2))
    require(s > 0, "data", "X must not be zero for linreg", s)
    return 1.0 / (s * s)


def linreg_residual(y: Vec, b: Vec) -> tuple[Vec, float]:
    """``(z, ||z||)`` with ``z = y - b`` from the decoded ``y = X w``; send ``z`` next."""
    z = np.asarray(y, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    return z, float(np.linalg.norm(z))


def linreg_step(w: Vec, g: Vec, eta: float) -> Vec:
    """``w - eta g`` from the decoded gradient ``g = X^T z``."""
    return np.asarray(w, dtype=np.float64) - eta * np.asarray(g, dtype=np.float64)


def _matrix(x: Any) -> Any:
    """``x`` as an array, or as it is when it is streamed from its file (``X @ v`` and
    ``X.T @ v`` chunk by chunk: :class:`mpi_coded.store.sketch.Streamed`)."""
    return x if getattr(x, "streamed", False) else np.asarray(x, dtype=np.float64)


def reference_power(x: npt.ArrayLike, w0: Vec, steps: int) -> tuple[Vec, list[float]]:
    """Power iteration on the uncoded ``X``: final ``w`` and each step's eigenvalue estimate."""
    xm = _matrix(x)
    w = np.asarray(w0, dtype=np.float64)
    est: list[float] = []
    for _ in range(steps):
        w, lam = power_step(w, xm @ w)
        est.append(lam)
    return w, est


def reference_linreg(x: npt.ArrayLike, b: Vec, w0: Vec, eta: float,
                     steps: int) -> tuple[Vec, list[float]]:
    """Gradient descent on the uncoded ``X``: final ``w`` and each step's ``||X w - b||``."""
    xm = _matrix(x)
    w = np.asarray(w0, dtype=np.float64)
    res: list[float] = []
    for _ in range(steps):
        z, r = linreg_residual(xm @ w, b)
        res.append(r)
        w = linreg_step(w, xm.T @ z, eta)
    return w, res


def relative_error(w: Vec, ref: Vec) -> float:
    """``||w - ref|| / max(1, ||ref||)``; the end check passes when it is <= REFERENCE_RTOL."""
    d = np.asarray(w, dtype=np.float64) - np.asarray(ref, dtype=np.float64)
    return float(np.linalg.norm(d)) / max(1.0, float(np.linalg.norm(ref)))


Product = Callable[[int, Any], Any]
"""``product(which, v)``: the decoded ``X v`` (``which = 0``) or ``X^T v`` (``which = 1``)."""
StepValues = tuple[float | None, float | None]
"""What a step reports: its eigenvalue estimate and its residual norm (None: not this
workload's)."""


_RUNTIME = "_mpi_coded_runtime"
"""Set on an exception raised by the runtime's callbacks inside a workload's step."""


def _runtime(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` whose exceptions are marked as the runtime's (not the workload's)."""
    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except BaseException as exc:
            setattr(exc, _RUNTIME, True)
            raise
    return call


@contextmanager
def plugin_failure(work: Workload) -> Iterator[None]:
    """A plugin workload's own exception as a :class:`PluginError` naming the plugin."""
    try:
        yield
    except Exception as exc:
        origin = WORKLOADS.origin(work.name) if work.name in WORKLOADS else "mpi_coded"
        if origin == "mpi_coded" or getattr(exc, _RUNTIME, False) or \
                isinstance(exc, PluginError):
            raise
        raise PluginError(origin, "workload", work.name,
                          f"{type(exc).__name__}: {exc}") from exc


@dataclass
class Iterate:
    """A workload's state between steps: the iterate ``w`` (and linreg's ``b`` and ``eta``)."""

    workload: Workload
    w0: Vec
    w: Vec
    b: Vec
    eta: float = 0.0

    @classmethod
    def start(cls, kind: str, x: Any, rows: int, cols: int, seed: int) -> Iterate:
        """``w_0`` of the workload called ``kind`` for the ``rows x cols`` matrix ``x``."""
        work = WORKLOADS.lookup(kind)
        with plugin_failure(work):
            return work.start(x, rows, cols, seed)

    @property
    def kind(self) -> str:
        return self.workload.name

    @property
    def products(self) -> int:
        """Products per step (linreg: ``X w`` and ``X^T z``)."""
        return self.workload.products

    def step(self, fresh: Callable[[], Any], product: Product) -> StepValues:
        """One step through ``product`` (:meth:`Workload.step`); a plugin workload's own
        failure is a :class:`~mpi_coded.errors.PluginError` naming it (the runtime's, from
        ``product`` or ``fresh``, passes through as it is)."""
        with plugin_failure(self.workload):
            return self.workload.step(self, _runtime(fresh), _runtime(product))

    def check(self, x: npt.ArrayLike, steps: int) -> dict[str, Any] | None:
        """The end check (:meth:`Workload.final_check`); None when there is none."""
        with plugin_failure(self.workload):
            return self.workload.final_check(self, x, steps)

    @property
    def stateful(self) -> bool:
        """It carries state from step to step (saved with each step, for ``--resume``)."""
        return self.workload.stateful

    def state(self, step: int, job: str) -> checkpoint.SavedState:
        """The state after ``step`` (:mod:`mpi_coded.store.checkpoint`)."""
        return checkpoint.SavedState(step, job, {"w0": self.w0, "w": self.w, "b": self.b},
                                {"eta": self.eta})

    def restore(self, st: checkpoint.SavedState) -> None:
        """Continue from a saved state."""
        self.w0, self.w, self.b = st.arrays["w0"], st.arrays["w"], st.arrays["b"]
        self.eta = float(st.values["eta"])


@dataclass(frozen=True, eq=False)
class Workload:
    """What the elastic job computes from step to step (module docstring).  The default
    is ``independent``: a fresh ``w_t`` every step, one product, nothing carried."""

    name: str
    summary: str
    products: int = 1
    """Products per step: 1 (``X w``) or 2 (``X w`` then ``X^T z``: each machine also
    stores a coded block of ``X^T``)."""
    resumable: bool = True
    """``--resume`` may continue it (without state, or from the state saved with each
    step)."""
    stateful: bool = False
    """It carries state from step to step: the master saves it with each step
    (``OUT.state.npz``) and ``--resume`` continues from it."""

    def __repr__(self) -> str:
        return f"<workload {self.name}>"

    def check(self, field: str, rows: int, cols: int, key: str = "workload") -> None:
        """Its rules on the field and the shape of ``X`` (ConfigError naming ``key``)."""

    def start(self, x: npt.ArrayLike, rows: int, cols: int, seed: int) -> Iterate:
        """The state before step 1."""
        return Iterate(self, np.zeros(0), np.zeros(0), np.zeros(0))

    def step(self, it: Iterate, fresh: Callable[[], Any], product: Product) -> StepValues:
        """One step: ``independent`` multiplies ``fresh()``."""
        product(0, fresh())
        return None, None

    def final_check(self, it: Iterate, x: npt.ArrayLike, steps: int
                    ) -> dict[str, Any] | None:
        """The final ``w`` against the same ``steps`` on the uncoded ``x`` with numpy
        (module docstring); None when the workload has nothing to check."""
        return None

    def verdict(self, it: Iterate, ref: Vec) -> dict[str, Any]:
        """The end check's record: ``w`` against the reference ``ref``."""
        rel = relative_error(it.w, ref)
        return {"workload": self.name, "relative_error": rel, "rtol": REFERENCE_RTOL,
                "ok": rel <= REFERENCE_RTOL}


@dataclass(frozen=True, eq=False)
class FloatIterative(Workload):
    """An iterative workload: float64 only, the same seeded unit ``w_0``."""

    stateful: bool = True

    def check(self, field: str, rows: int, cols: int, key: str = "workload") -> None:
        require(field == "float64", key, f"{self.name} needs field = \"float64\"", field)

    def start(self, x: npt.ArrayLike, rows: int, cols: int, seed: int) -> Iterate:
        w0 = start_vector(cols, seed)
        return Iterate(self, w0, w0, w0)


@dataclass(frozen=True, eq=False)
class Power(FloatIterative):
    """Power iteration ``w_{t+1} = y_t / ||y_t||`` on a square ``X`` (A.8)."""

    def check(self, field: str, rows: int, cols: int, key: str = "workload") -> None:
        super().check(field, rows, cols, key)
        require(rows == cols, key, "power needs a square X (rows == cols)", f"{rows} x {cols}")

    def step(self, it: Iterate, fresh: Callable[[], Any], product: Product) -> StepValues:
        it.w, eigenvalue = power_step(it.w, product(0, it.w))
        return eigenvalue, None

    def final_check(self, it: Iterate, x: npt.ArrayLike, steps: int
                    ) -> dict[str, Any] | None:
        return self.verdict(it, reference_power(x, it.w0, steps)[0])


@dataclass(frozen=True, eq=False)
class LinReg(FloatIterative):
    """Gradient descent on ``||X w - b||^2 / 2``: two products a step (A.8)."""

    products: int = 2

    def start(self, x: npt.ArrayLike, rows: int, cols: int, seed: int) -> Iterate:
        w0 = start_vector(cols, seed)
        return Iterate(self, w0, w0, linreg_targets(rows, seed), linreg_eta(x))

    def step(self, it: Iterate, fresh: Callable[[], Any], product: Product) -> StepValues:
        z, residual = linreg_residual(product(0, it.w), it.b)
        it.w = linreg_step(it.w, product(1, z), it.eta)
        return None, residual

    def final_check(self, it: Iterate, x: npt.ArrayLike, steps: int
                    ) -> dict[str, Any] | None:
        return self.verdict(it, reference_linreg(x, it.b, it.w0, it.eta, steps)[0])


WORKLOADS: Registry[Workload] = Registry("workload")
"""The workloads known by name (the package's three, and plugins')."""


def mpi_coded_register(registry: HookRegistrar) -> None:
    """The package's own workloads, through the hook a plugin uses."""
    registry.workload(Workload("independent", "a fresh w_t every step"))
    registry.workload(Power("power", "power iteration w_{t+1} = y_t / norm(y_t), square X"))
    registry.workload(LinReg("linreg", "gradient descent on norm(X w - b)^2 / 2"))


mpi_coded_register(HookRegistrar("mpi_coded", {"workload": WORKLOADS}))


def validate_workload(workload: object, field: str, rows: int, cols: int,
                      key: str = "workload") -> str:
    """``workload`` if it is known and fits the field and shape; else ConfigError naming ``key``."""
    WORKLOADS.lookup(workload, key).check(field, rows, cols, key)
    assert isinstance(workload, str)
    return workload
