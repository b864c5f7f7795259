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
#   NODELIST           launch on these nodes only (comma-separated; set by a relaunch)
#   STORE_TIMEOUT      seconds the writing of a store may take (write_store; default 1800)

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
            local only=()
            if [ -n "${NODELIST:-}" ]; then
                only=(--nodelist="$NODELIST" --nodes="$(tr ',' '\n' <<< "$NODELIST" | wc -l)")
            fi
            echo "+ srun --mpi=$SRUN_MPI${NODELIST:+ ${only[*]}} -n $NTASKS $PY -m mpi_coded $*"
            srun --mpi="$SRUN_MPI" ${only[@]+"${only[@]}"} -n "$NTASKS" "$PY" -m mpi_coded "$@"
            ;;
        mpiexec)
            local exe=${MPIEXEC:-}
            if [ -z "$exe" ]; then
                exe=$(dirname "$PY")/mpiexec
                [ -x "$exe" ] || exe=$(command -v mpiexec) || die "no mpiexec: set MPIEXEC"
            fi
            local flags=()
            read -r -a flags <<< "${MPIEXEC_ARGS:-}"
            if [ -n "${NODELIST:-}" ]; then
                flags+=(-hosts "$NODELIST")
            fi
            echo "+ $exe${flags[*]:+ ${flags[*]}} -n $NTASKS $PY -m mpi_coded $*"
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

# write_store STORE WRITE_ARGS... : write the coded store STORE (docs/storage.md) where it is
# missing: `mpi-coded store write --if-missing WRITE_ARGS...` leaves a directory that holds a
# store as it is (the job checks it, and repairs what it lacks). With {host} in STORE (one
# directory per node, each node's host name, which must be its SLURM node name), one task per
# node of the allocation writes the blocks placed on it (--this-host): machine n's on node
# (n mod k) + 1 of the k nodes, so that the first node, the master's, holds one fewer, as the
# launchers place the ranks. Outside an allocation this host is the one node; without
# {host} the one directory (shared storage) is written from here.
write_store() {
    local store=$1 nodes hosts k rc=0 on=()
    shift
    local write=("$PY" -m mpi_coded store write --out "$store" --if-missing "$@")
    case "$store" in
        *"{host}"*)
            if [ -n "${SLURM_JOB_NODELIST:-}" ]; then
                nodes=$(scontrol show hostnames "$SLURM_JOB_NODELIST")
                k=$(wc -l <<< "$nodes")
                on=(srun --nodes="$k" --ntasks="$k" --ntasks-per-node=1)
            else
                nodes=$(hostname)
            fi
            hosts=$({ tail -n +2 <<< "$nodes"; head -n 1 <<< "$nodes"; } | paste -sd, -)
            write+=(--hosts "$hosts" --this-host)
            ;;
    esac
    echo "+ ${on[*]:+${on[*]} }${write[*]}"
    timeout "${STORE_TIMEOUT:-1800}" ${on[@]+"${on[@]}"} "${write[@]}" || rc=$?
    [ "$rc" -eq 0 ] || die "writing the store $store failed (rc $rc)"
}

# nodes_up: the allocation's nodes a relaunch may use, comma-separated: SLURM does not report
# them down, drained or failing (sinfo), and a one-task step starts on each within 5 s (a
# node whose slurmd is gone does not answer, though slurmctld has not noticed yet).
nodes_up() {
    local node state up=()
    for node in $(scontrol show hostnames "$SLURM_JOB_NODELIST"); do
        state=$(sinfo -h -N -n "$node" -o %t 2> /dev/null | head -n 1)
        case "$state" in *down* | *drain* | *fail* | *unk* | *maint*) continue ;; esac
        if timeout 5 srun --nodes=1 --ntasks=1 --nodelist="$node" --overlap true \
            > /dev/null 2>&1; then
            up+=("$node")
        fi
    done
    (IFS=,; echo "${up[*]}")
}

# launch_relaunching TRIES OUT ARGS... : launch ARGS; when the launch fails for anything but
# bad input (exit 2), relaunch up to TRIES times on the nodes up (nodes_up), NTASKS lowered
# by the ranks the lost nodes held, with --resume once OUT has a step (docs/storage.md).
launch_relaunching() {
    local tries=$1 out=$2 attempt=0 rc=0 all="" up
    shift 2
    local args=("$@")
    local per_node=${SLURM_TASKS_PER_NODE:-}
    while true; do
        rc=0
        launch "${args[@]}" || rc=$?
        if [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ] || [ "$attempt" -ge "$tries" ]; then
            return "$rc"
        fi
        attempt=$((attempt + 1))
        [ -n "${SLURM_JOB_NODELIST:-}" ] || die "relaunch: RELAUNCH needs a SLURM allocation"
        [ -n "$all" ] || all=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | paste -sd, -)
        up=$(nodes_up)
        [ -n "$up" ] || die "relaunch: no node of the allocation answers"
        NTASKS=$("$PY" -m mpi_coded.cluster.relaunch ranks-left "$per_node" "$all" "$up")
        NODELIST=$up
        # the lost node never reports the failed step's end, so SLURM still counts its CPUs
        # taken on every node: the relaunch's steps share them (srun --overlap)
        export SLURM_OVERLAP=1
        if [ "$("$PY" -m mpi_coded.cluster.relaunch has-steps "$out")" = yes ]; then
            case " ${args[*]} " in *" --resume "*) ;; *) args+=(--resume) ;; esac
        fi
        echo "mpi-coded slurm: launch $((attempt - 1)) ended with rc $rc; relaunch $attempt" \
            "on $NODELIST ($NTASKS ranks) at $(date +%s.%N)"
    done
}
