#!/usr/bin/env bash
# The coded job (`mpi-coded run coded ...`) as a SLURM batch job.
#
#   mkdir -p results/slurm && CODED_CONFIG=configs/coded.toml sbatch --ntasks=R slurm/coded.sh
#   CODED_ARGS="--flag value ..." sbatch --ntasks=R slurm/coded.sh
#
# The job's own arguments come from the environment, so that this script does not
# depend on them; --ntasks must match what the job expects.
# Environment: see slurm/common.sh (MPI_CODED_PYTHON, LAUNCHER, RESULTS_DIR, ...) and
#   CODED_CONFIG   passed as --config (optional)
#   CODED_ARGS     more `mpi-coded run coded` arguments, split on spaces
#   OUT            the JSON-lines file (default: $RESULTS_DIR/coded-$SLURM_JOB_ID.jsonl)
#
#SBATCH --job-name=mpi-coded-coded
#SBATCH --ntasks=7
#SBATCH --time=00:20:00
#SBATCH --output=results/slurm/%x-%j.out

set -euo pipefail
# shellcheck source=slurm/common.sh
source "${MPI_CODED_ROOT:-${SLURM_SUBMIT_DIR:-$PWD}}/slurm/common.sh"

if ! "$PY" -m mpi_coded run coded --help > /dev/null 2>&1; then
    die "'mpi-coded run coded' is not available in $PY (this version has no coded job)"
fi
OUT=${OUT:-$RESULTS_DIR/coded-$JOB_TAG.jsonl}
read -r -a EXTRA <<< "${CODED_ARGS:-}"
ARGS=(run coded --out "$OUT")
if [ -n "${CODED_CONFIG:-}" ]; then
    ARGS+=(--config "$CODED_CONFIG")
fi
ARGS+=("${EXTRA[@]}")

job_header
launch "${ARGS[@]}"
"$PY" "$ROOT/scripts/check_results.py" "$OUT"
