"""Calibration: the cost table measured on this machine, and the coded job's phases
predicted in seconds with it (docs/theory.md (C.4); measured values: docs/benchmarks.md).

The delay model counts field operations (docs/theory.md (B.6)); the runtime measures
seconds, and its kernels cost very different seconds per operation.  Four parts:

* :mod:`.measuring`: times every kernel of :class:`mpi_coded.codes.prices.Kernel` here
  (:func:`measure`, :func:`measure_report` with the problems of a measurement);
* :mod:`.contention`: how much slower a rank computes beside others
  (:func:`measure_contention`, the :class:`~mpi_coded.codes.prices.Contention` factors);
* :mod:`.predict`: every phase of a job in seconds (:func:`predict_seconds`: the calls the
  runtime makes, :func:`job_work`, priced and shared out over the cores,
  :func:`shared_wall`, :func:`slowdown`);
* :mod:`.fitted`: the model fitted on short runs of the job itself (docs/theory.md (C.5):
  :func:`fit` of two class multipliers, :class:`FittedModel`, :func:`summarize_runs`
  across independent runs with the spread);

and :mod:`.files`, the calibration file (:func:`write`, :func:`load`; ``mpi-coded model
--calibrate`` and ``--calibration FILE``).  The names below are re-exported here.
"""

from mpi_coded.analysis.calibration.contention import (
    CONTENTION_TIMEOUT,
    MAX_CONTENTION_PROCS,
    MIXES,
    OVER_PER_CORE,
    cores_here,
    measure_contention,
)
from mpi_coded.analysis.calibration.files import READS, VERSION, load, write
from mpi_coded.analysis.calibration.fitted import (
    Features,
    FittedModel,
    Observation,
    features,
    fit,
    median_model,
    phase_overhead,
    spread,
    summarize_runs,
)
from mpi_coded.analysis.calibration.measuring import (
    CalibrationError,
    Measurement,
    measure,
    measure_report,
)
from mpi_coded.analysis.calibration.predict import (
    JobWork,
    job_work,
    phase_seconds,
    predict_seconds,
    runtime_field,
    shared_wall,
    slowdown,
)
from mpi_coded.codes.prices import KEYS

__all__ = ["CONTENTION_TIMEOUT", "KEYS", "MAX_CONTENTION_PROCS", "MIXES", "OVER_PER_CORE",
           "READS", "VERSION", "CalibrationError", "Features", "FittedModel", "JobWork",
           "Measurement", "Observation", "cores_here", "features", "fit", "job_work", "load",
           "measure", "measure_contention", "measure_report", "median_model", "phase_overhead",
           "phase_seconds", "predict_seconds", "runtime_field", "shared_wall", "slowdown",
           "spread", "summarize_runs", "write"]
