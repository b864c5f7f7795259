#!/usr/bin/env bash
# The elastic job (`mpi-coded run cec`) as a SLURM batch job.
#
#   mkdir -p results/slurm && sbatch slurm/cec.sh                 # the seed example, 7 ranks
#   CEC_CONFIG=configs/random_preemption.toml sbatch --ntasks=16 slurm/cec.sh
#   LAUNCHER=mpiexec CEC_ARGS="--policy cyclic --t-row 0.002" sbatch slurm/cec.sh
#
# --ntasks must be N + 1 of the config (the seed example: N = 6, so 7).
# Environment: see slurm/common.sh (MPI_CODED_PYTHON, LAUNCHER, RESULTS_DIR, ...) and
#   CEC_CONFIG   a TOML config (default: the seed's example)
#   CEC_ARGS     more `mpi-coded run cec` flags, split on spaces (--field, --policy, --t-row,
#                --seed, --timeout)
#   OUT          the JSON-lines file (default: $RESULTS_DIR/cec-$SLURM_JOB_ID.jsonl)
#   CEC_STORE    a coded store of one directory per node on node-local disk, e.g.
#                /local/store/{host} (or --store in CEC_ARGS; docs/storage.md): the job runs
#                from it, and on each node whose directory holds no store yet its blocks are
#                written first, one task per node (`mpi-coded store write --this-host
#                --if-missing`, from CEC_CONFIG: settings that change X belong there, not in
#                CEC_ARGS; a `data` file must be on shared storage)
#   RELAUNCH     relaunches on the nodes left when a node is lost (default 0): for a job
#                from a coded store (CEC_STORE); submit with sbatch --no-kill so that the
#                allocation outlives the node
#
#SBATCH --job-name=mpi-coded-cec
#SBATCH --ntasks=7
#SBATCH --time=00:10:00
#SBATCH --output=results/slurm/%x-%j.out

set -euo pipefail
# shellcheck source=slurm/common.sh
source "${MPI_CODED_ROOT:-${SLURM_SUBMIT_DIR:-$PWD}}/slurm/common.sh"

OUT=${OUT:-$RESULTS_DIR/cec-$JOB_TAG.jsonl}
read -r -a EXTRA <<< "${CEC_ARGS:-}"
ARGS=(run cec --out "$OUT")
if [ -n "${CEC_CONFIG:-}" ]; then
    ARGS+=(--config "$CEC_CONFIG")
fi
STORE=${CEC_STORE:-}
for i in "${!EXTRA[@]}"; do  # a store named in CEC_ARGS is written the same way
    case "${EXTRA[$i]}" in
        --store) STORE=${EXTRA[$((i + 1))]:-$STORE} ;;
        --store=*) STORE=${EXTRA[$i]#--store=} ;;
    esac
done
if [ -n "${CEC_STORE:-}" ]; then
    ARGS+=(--store "$CEC_STORE")
fi
ARGS+=("${EXTRA[@]}")

job_header
if [ -n "$STORE" ]; then
    WRITE=()
    if [ -n "${CEC_CONFIG:-}" ]; then
        WRITE+=(--config "$CEC_CONFIG")
    fi
    write_store "$STORE" ${WRITE[@]+"${WRITE[@]}"}
fi
launch_relaunching "${RELAUNCH:-0}" "$OUT" "${ARGS[@]}"
"$PY" "$ROOT/scripts/check_results.py" "$OUT"
