#!/usr/bin/env bash
# A real single-node SLURM on this machine, for testing the batch scripts in slurm/.
#
#   scripts/slurm_harness.sh [-- COMMAND [ARGS...]]
#
# Starts munged (as the munge user, on a private socket) or uses AuthType=auth/none,
# then slurmctld and slurmd on this host (NodeName = `hostname -s`), all with their
# state, logs and config in a temporary directory; submits the shipped batch scripts
# (slurm/cec.sh with LAUNCHER=srun and LAUNCHER=mpiexec, and from a store of one directory
# per node that the script writes itself, slurm/coded.sh when `mpi-coded run coded` exists), waits for them, checks their exit codes and that their
# JSON lines verified; runs COMMAND (if given) with SLURM_CONF pointing at this cluster,
# e.g. `scripts/sweep.py --via slurm ...`; then stops every daemon it started.
#
# Needs root and Debian's slurm-wlm and munge (apt-get install slurm-wlm munge).
# Prints one line per check:
#   HARNESS RESULT name=cec-srun job=3 state=COMPLETED exit=0:0 verified=yes
#   HARNESS SKIP name=coded reason=...
#   HARNESS COMMAND rc=0
#   HARNESS DONE failures=0
# Exit status 0 when everything passed, 1 when something failed, 2 on a setup error.
#
# Environment (all optional):
#   MPI_CODED_PYTHON     python for the jobs (default: the repo's .venv/bin/python)
#   HARNESS_DIR          state, logs and results (default: a new temporary directory,
#                        removed at the end unless something failed or HARNESS_KEEP=1)
#   HARNESS_JOBS         shipped scripts to submit (default: "cec-srun cec-mpiexec cec-store
#                        coded")
#   HARNESS_AUTH         munge or none (default: munge if munged is installed)
#   HARNESS_PORT         slurmctld port; slurmd uses the next one (default: the first
#                        free pair from 16817)
#   HARNESS_NTASKS       ranks of each job (default: 7, the seed example's N + 1)
#   HARNESS_JOB_TIMEOUT  seconds to wait for each job (default: 300)
#   HARNESS_CODED_ARGS, HARNESS_CODED_CONFIG, HARNESS_CODED_NTASKS: the coded job's
#                        CODED_ARGS (default: "$CODED_DEFAULT" below), CODED_CONFIG and
#                        --ntasks (default: HARNESS_NTASKS)

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${MPI_CODED_PYTHON:-$ROOT/.venv/bin/python}
JOBS=${HARNESS_JOBS-cec-srun cec-mpiexec cec-store coded}
PORT=${HARNESS_PORT:-}
NTASKS=${HARNESS_NTASKS:-7}
JOB_TIMEOUT=${HARNESS_JOB_TIMEOUT:-300}
# A small coded job on 7 ranks (K = 6 servers + the master).
CODED_DEFAULT="--scheme unified --K 6 --q 4 --mu 1/2 --rows-per-batch 4 --n 20 --N 8"
HOST=$(hostname -s)
NCPU=$(nproc)

say() { echo "HARNESS $*"; }
setup_error() {
    say "SETUP-ERROR $*" >&2
    exit 2
}

[ "$(id -u)" -eq 0 ] || setup_error "must run as root (slurmd and munged need it)"
for tool in slurmctld slurmd sbatch scontrol squeue scancel; do
    command -v "$tool" > /dev/null || setup_error "$tool is missing: apt-get install slurm-wlm"
done
[ -x "$PY" ] || setup_error "MPI_CODED_PYTHON=$PY is not an executable python"
AUTH=${HARNESS_AUTH:-}
if [ -z "$AUTH" ]; then
    if command -v munged > /dev/null; then AUTH=munge; else AUTH=none; fi
fi

if [ -n "${HARNESS_DIR:-}" ]; then
    STATE=$HARNESS_DIR
    OWN_STATE=0
else
    STATE=$(mktemp -d /tmp/slurm-harness.XXXXXX)
    OWN_STATE=1
fi
mkdir -p "$STATE"/{ctld,spool,results}
chmod 755 "$STATE"
CONF=$STATE/slurm.conf
RESULTS=$STATE/results
export SLURM_CONF=$CONF
PIDS=()
FAILURES=0
MUNGE_DIR=

stop_all() {
    local rc=$?
    trap - EXIT INT TERM
    if [ "${#PIDS[@]}" -gt 0 ]; then
        # Jobs first (their slurmstepd outlives slurmd), then the daemons we started.
        scancel --quiet --partition=harness 2> /dev/null || true
        sleep 1
        local pid
        for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2> /dev/null || true; done
        for _ in $(seq 1 50); do
            local alive=0
            for pid in "${PIDS[@]}"; do kill -0 "$pid" 2> /dev/null && alive=1; done
            [ "$alive" -eq 0 ] && break
            sleep 0.2
        done
        for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2> /dev/null || true; done
        wait 2> /dev/null || true
        echo "harness: stopped daemons ${PIDS[*]}"
    fi
    if [ -n "$MUNGE_DIR" ]; then
        cp "$MUNGE_DIR/munged.log" "$STATE/munged-own.log" 2> /dev/null || true
        rm -rf "$MUNGE_DIR"
    fi
    if [ "$rc" -ne 0 ] || [ "$FAILURES" -ne 0 ]; then
        for log in "$STATE"/slurmctld.log "$STATE"/slurmd.log "$STATE"/munged.log \
            "$STATE"/munged-own.log; do
            [ -f "$log" ] && { echo "--- tail of $log"; tail -n 25 "$log"; }
        done
        echo "harness: state and logs kept in $STATE"
    elif [ "$OWN_STATE" -eq 1 ] && [ "${HARNESS_KEEP:-0}" != 1 ]; then
        rm -rf "$STATE"
    else
        echo "harness: state and logs in $STATE"
    fi
    exit "$rc"
}
trap stop_all EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: fail fast if a daemon died
    local deadline=$((SECONDS + $1)) what=$2 pid
    shift 2
    while [ "$SECONDS" -lt "$deadline" ]; do
        if "$@" > /dev/null 2>&1; then return 0; fi
        for pid in "${PIDS[@]}"; do
            kill -0 "$pid" 2> /dev/null || setup_error "$what: a daemon (pid $pid) exited"
        done
        sleep 0.2
    done
    setup_error "$what did not happen within $1 s"
}

# --- authentication ---------------------------------------------------------------
if [ "$AUTH" = munge ]; then
    command -v munge > /dev/null || setup_error "munge is missing: apt-get install munge"
    # Its own short directory: munged needs every directory above its socket searchable
    # by the munge user, and a socket path is at most 107 bytes.
    MUNGE_DIR=$(mktemp -d /tmp/harness-munge.XXXXXX)
    dd if=/dev/urandom of="$MUNGE_DIR/munge.key" bs=1024 count=1 status=none
    chown -R munge:munge "$MUNGE_DIR"
    chmod 755 "$MUNGE_DIR"   # munged wants the socket's directory searchable by all
    chmod 400 "$MUNGE_DIR/munge.key"
    SOCKET=$MUNGE_DIR/munge.socket
    setpriv --reuid=munge --regid=munge --init-groups munged --foreground \
        --socket="$SOCKET" --key-file="$MUNGE_DIR/munge.key" \
        --pid-file="$MUNGE_DIR/munged.pid" --log-file="$MUNGE_DIR/munged.log" \
        --seed-file="$MUNGE_DIR/munged.seed" > "$STATE/munged.log" 2>&1 &
    PIDS+=($!)
    munge_ok() { munge -n --socket="$SOCKET" | unmunge --socket="$SOCKET"; }
    wait_for 20 "munged answering on $SOCKET" munge_ok
    AUTH_CONF="AuthType=auth/munge
AuthInfo=socket=$SOCKET
CredType=cred/munge"
elif [ "$AUTH" = none ]; then
    AUTH_CONF="AuthType=auth/none
CredType=cred/none"
else
    setup_error "HARNESS_AUTH must be munge or none (got '$AUTH')"
fi

# --- ports: the first free pair from 16817 (another harness may be running) ------------
listening() { (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null; }
if [ -z "$PORT" ]; then
    for p in $(seq 16817 2 16999); do
        if ! listening "$p" && ! listening $((p + 1)); then PORT=$p; break; fi
    done
    [ -n "$PORT" ] || setup_error "no free port pair in 16817-17000 (set HARNESS_PORT)"
fi

# --- slurm.conf ---------------------------------------------------------------------
cat > "$CONF" << EOF
# Written by scripts/slurm_harness.sh: a single-node cluster for tests.
ClusterName=harness
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
$AUTH_CONF
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SwitchType=switch/none
MpiDefault=none
# A fresh job id range per harness: MPICH names its shared-memory segment after the PMI
# job id, and a segment left in /dev/shm by a killed job 1 breaks the next job 1.
FirstJobId=$((1000 + RANDOM * 1000))
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
MinJobAge=600
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$NCPU State=UNKNOWN
PartitionName=harness Nodes=$HOST Default=YES MaxTime=60 State=UP OverSubscribe=FORCE:4
EOF

# --- daemons ------------------------------------------------------------------------
slurmctld -D -i -f "$CONF" > "$STATE/slurmctld.out" 2>&1 &
PIDS+=($!)
wait_for 30 "slurmctld answering on port $PORT" scontrol ping
slurmd -D -f "$CONF" > "$STATE/slurmd.out" 2>&1 &
PIDS+=($!)
node_idle() { sinfo -h -n "$HOST" -o %t | grep -qx 'idle'; }
wait_for 60 "node $HOST idle" node_idle
echo "harness: SLURM up on $HOST ($NCPU CPUs, auth $AUTH, port $PORT), SLURM_CONF=$CONF"

# --- jobs ---------------------------------------------------------------------------
job_field() {  # job_field JOBID FIELD
    scontrol show job -o "$1" 2> /dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

wait_job() {  # wait_job JOBID: sets STATE_ and EXIT_
    local id=$1 t=0
    while :; do
        STATE_=$(job_field "$id" JobState)
        case "$STATE_" in
            PENDING | RUNNING | CONFIGURING | COMPLETING | SUSPENDED | "") ;;
            *) break ;;
        esac
        if [ "$t" -ge $((JOB_TIMEOUT * 2)) ]; then
            scancel "$id" || true
            STATE_="HARNESS_TIMEOUT($JOB_TIMEOUT s,was:$STATE_)"
            break
        fi
        sleep 0.5
        t=$((t + 1))
    done
    EXIT_=$(job_field "$id" ExitCode)
}

run_shipped() {  # run_shipped NAME SCRIPT OUT [VAR=VALUE...] -- [SBATCH ARGS...]
    local name=$1 script=$2 out=$3 id verified=no
    shift 3
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    if ! id=$(cd "$ROOT" && env MPI_CODED_ROOT="$ROOT" MPI_CODED_PYTHON="$PY" \
        RESULTS_DIR="$RESULTS" OUT="$out" "${envs[@]}" sbatch --parsable -N 1 --overcommit \
        --time=10 --output="$RESULTS/$name-%j.out" "$@" "$script"); then
        say "RESULT name=$name job=none state=SUBMIT_FAILED exit=none verified=no"
        FAILURES=$((FAILURES + 1))
        return 0
    fi
    id=${id%%;*}
    echo "harness: submitted $name as job $id"
    wait_job "$id"
    if "$PY" "$ROOT/scripts/check_results.py" "$out"; then verified=yes; fi
    echo "--- output of $name (job $id)"
    cat "$RESULTS/$name-$id.out" 2> /dev/null || true
    say "RESULT name=$name job=$id state=$STATE_ exit=$EXIT_ verified=$verified"
    if [ "$STATE_" != COMPLETED ] || [ "$EXIT_" != "0:0" ] || [ "$verified" != yes ]; then
        FAILURES=$((FAILURES + 1))
    fi
}

for job in $JOBS; do
    case "$job" in
        cec-srun | cec-mpiexec)
            run_shipped "$job" slurm/cec.sh "$RESULTS/$job.jsonl" LAUNCHER="${job#cec-}" \
                -- --ntasks="$NTASKS"
            ;;
        cec-store)  # no store yet: slurm/cec.sh writes it (one task per node), then runs
            run_shipped "$job" slurm/cec.sh "$RESULTS/$job.jsonl" LAUNCHER=srun \
                CEC_STORE="$RESULTS/store/{host}" -- --ntasks="$NTASKS"
            ;;
        coded)
            if ! why=$("$PY" -m mpi_coded run coded --help 2>&1 > /dev/null); then
                say "SKIP name=coded reason='mpi-coded run coded --help' failed:" \
                    "$(echo "$why" | tail -n 1)"
                continue
            fi
            run_shipped coded slurm/coded.sh "$RESULTS/coded.jsonl" LAUNCHER=srun \
                CODED_ARGS="${HARNESS_CODED_ARGS-$CODED_DEFAULT}" CODED_CONFIG="${HARNESS_CODED_CONFIG:-}" \
                -- --ntasks="${HARNESS_CODED_NTASKS:-$NTASKS}"
            ;;
        *)
            setup_error "unknown job '$job' in HARNESS_JOBS (cec-srun, cec-mpiexec, cec-store," \
                "coded)"
            ;;
    esac
done

if [ "$#" -gt 0 ]; then
    [ "$1" = "--" ] && shift
    echo "harness: running $* (SLURM_CONF=$CONF)"
    rc=0
    (cd "$ROOT" && MPI_CODED_PYTHON="$PY" "$@") || rc=$?
    say "COMMAND rc=$rc"
    [ "$rc" -eq 0 ] || FAILURES=$((FAILURES + 1))
fi

say "DONE failures=$FAILURES"
[ "$FAILURES" -eq 0 ] || exit 1
