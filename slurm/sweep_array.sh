#!/usr/bin/env bash
# One point of a parameter sweep per array task; scripts/sweep.py --via slurm writes the
# task files, submits this script as an array job and collects the results:
#
#   scripts/sweep.py --via slurm --grid t_row=0,0.001 --grid policy=heterogeneous,cyclic
#
# By hand: write $SWEEP_DIR/tasks/<i>.args (the `mpi_coded` arguments, one per line, without
# --out) for i = 0..K-1, then
#   SWEEP_DIR=... sbatch --array=0-<K-1>%1 --ntasks=7 slurm/sweep_array.sh
# Task i writes $SWEEP_DIR/runs/<i>.jsonl and $SWEEP_DIR/runs/<i>.rc (exit status, job ids).
# Environment: see slurm/common.sh (MPI_CODED_PYTHON, LAUNCHER, ...) and SWEEP_DIR (required).
#
#SBATCH --job-name=mpi-coded-sweep
#SBATCH --ntasks=7
#SBATCH --time=00:10:00
#SBATCH --output=results/slurm/%x-%A_%a.out

set -euo pipefail
# shellcheck source=slurm/common.sh
source "${MPI_CODED_ROOT:-${SLURM_SUBMIT_DIR:-$PWD}}/slurm/common.sh"

[ -n "${SWEEP_DIR:-}" ] || die "SWEEP_DIR is not set (scripts/sweep.py --via slurm sets it)"
TASK=${SLURM_ARRAY_TASK_ID:?submit with sbatch --array}
TASK_FILE=$SWEEP_DIR/tasks/$TASK.args
[ -f "$TASK_FILE" ] || die "no task file $TASK_FILE"
mapfile -t ARGS < "$TASK_FILE"
mkdir -p "$SWEEP_DIR/runs"
OUT=$SWEEP_DIR/runs/$TASK.jsonl
rm -f "$OUT"

job_header
rc=0
launch "${ARGS[@]}" --out "$OUT" || rc=$?
printf '{"rc": %d, "job_id": "%s", "array_job_id": "%s", "task": %d, "node": "%s", "launcher": "%s"}\n' \
    "$rc" "${SLURM_JOB_ID:-}" "${SLURM_ARRAY_JOB_ID:-}" "$TASK" "$(hostname -s)" "$LAUNCHER" \
    > "$SWEEP_DIR/runs/$TASK.rc"
exit "$rc"
