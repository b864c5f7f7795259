# shellcheck shell=bash
# Sourced by the batch scripts in slurm/ (not run on its own).
#
# Environment (all optional):
#   MPI_CODED_ROOT     the repository (default: $SLURM_SUBMIT_DIR, i.e. where sbatch ran)
#   MPI_CODED_PYTHON   the python that has mpi_coded installed (default: $ROOT/.venv/bin/python)
#   LAUNCHER           srun (default) or mpiexec
#   SRUN_MPI           the srun --mpi plugin (default: pmi2)
#   MPIEXEC            the mpiexec to use with LAUNCHER=mpiexec
#                      (default: the one next to MPI_CODED_PYTHON, else the one on PATH)
#   MPIEXEC_ARGS       more mpiexec flags, split on spaces, e.g. "--with-ft ulfm" for
#                      Open MPI's fault tolerance (docs/elastic.md)
#   RESULTS_DIR        where the JSON lines go (default: $ROOT/results/slurm)
#   NTASKS             MPI ranks (default: $SLURM_NTASKS, which sbatch --ntasks sets)

set -euo pipefail

ROOT=${MPI_CODED_ROOT:-${SLURM_SUBMIT_DIR:-$PWD}}
PY=${MPI_CODED_PYTHON:-$ROOT/.venv/bin/python}
LAUNCHER=${LAUNCHER:-srun}
SRUN_MPI=${SRUN_MPI:-pmi2}
RESULTS_DIR=${RESULTS_DIR:-$ROOT/results/slurm}
NTASKS=${NTASKS:-${SLURM_NTASKS:-}}
# shellcheck disable=SC2034  # used by the scripts that source this file
JOB_TAG=${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:-local}}

die() {
    echo "mpi-coded slurm: error: $*" >&2
    exit 2
}

[ -x "$PY" ] || die "MPI_CODED_PYTHON=$PY is not an executable python (set MPI_CODED_PYTHON)"
[ -n "$NTASKS" ] || die "no task count: submit with sbatch --ntasks=N (or set NTASKS)"
mkdir -p "$RESULTS_DIR"
# One BLAS thread per rank: the ranks already share the cores.
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export MKL_NUM_THREADS=${MKL_NUM_THREADS:-1}

# launch ARGS... : run `python -m mpi_coded ARGS...` on NTASKS ranks with the chosen launcher.
launch() {
    case "$LAUNCHER" in
        srun)
            echo "+ srun --mpi=$SRUN_MPI -n $NTASKS $PY -m mpi_coded $*"
            srun --mpi="$SRUN_MPI" -n "$NTASKS" "$PY" -m mpi_coded "$@"
            ;;
        mpiexec)
            local exe=${MPIEXEC:-}
            if [ -z "$exe" ]; then
                exe=$(dirname "$PY")/mpiexec
                [ -x "$exe" ] || exe=$(command -v mpiexec) || die "no mpiexec: set MPIEXEC"
            fi
            local flags=()
            read -r -a flags <<< "${MPIEXEC_ARGS:-}"
            echo "+ $exe${MPIEXEC_ARGS:+ ${flags[*]}} -n $NTASKS $PY -m mpi_coded $*"
            "$exe" ${flags[@]+"${flags[@]}"} -n "$NTASKS" "$PY" -m mpi_coded "$@"
            ;;
        *)
            die "LAUNCHER must be srun or mpiexec (got '$LAUNCHER')"
            ;;
    esac
}

# job_header: what ran where, at the top of the job's output file.
job_header() {
    echo "job ${SLURM_JOB_ID:-?} (${SLURM_JOB_NAME:-?}) on ${SLURM_JOB_NODELIST:-$(hostname -s)}:" \
        "$NTASKS tasks, launcher $LAUNCHER, python $PY"
}
