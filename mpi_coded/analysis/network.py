"""The network model: bytes and messages each host sends and receives, priced over its link
(docs/theory.md (B.7)).

Pure: never imports mpi4py.  Everything is counted from the plans the runtime executes:
the coded job's :class:`~mpi_coded.coded.shuffle.ShufflePlan` (multicast groups, padded
segment lengths, unicasts), its reducers' outputs, and the elastic job's
:class:`~mpi_coded.cec.plan.StepPlan` or uncoded split and moves.

**Messages.** The runtime's point-to-point message is a header of
:data:`HEADER_BYTES` (8 int64 words, ``runtime.core.wire``) and, when it carries one, a
payload of ``values x itemsize`` bytes (``itemsize`` of the field's dtype:
:data:`ITEMSIZE`), sent as two MPI messages; a message without payload is one, and so is
one whose payload of at most :data:`INLINE_BYTES` travels inline after the header (padded
to whole int64 words).  The shuffle's multicasts and unicasts never go inline (their
receivers post both receives).  A broadcast (``--multicast bcast``) carries no header:
one MPI message per tree edge.

**A multicast on the wire** (:func:`shuffle_traffic`):

* ``p2p``: the sender sends one copy (header and padded payload) to every receiver:
  ``j`` copies for a group of ``j + 1``;
* ``bcast``: one ``MPI_Ibcast`` on the group's communicator (ranks = the sorted group,
  root = the sender).  Every non-root member receives the payload exactly once; who
  sends it follows the tree of the MPI library, :data:`BCAST_TREES`:

  - ``binomial`` (default; MPICH for groups of fewer than 8 ranks or messages under
    12 KiB, ``MPIR_Ibcast_intra_sched_binomial``; Open MPI's libnbc for 5 or more ranks
    and messages under 64 KiB): with ``rel = (i - root) mod g`` the relative rank of
    member ``i``, member ``rel > 0`` receives from ``rel - lowbit(rel)``; the root sends
    ``ceil(log2 g)`` copies and some non-root members forward;
  - ``linear`` (Open MPI's libnbc for groups of at most 4): the root sends to every
    member, byte for byte ``p2p`` without the headers.

  Larger groups and messages switch to pipelined or scatter-allgather trees (MPICH for
  8 or more ranks over 12 KiB, Open MPI's chain above 64 KiB): every non-root member
  still receives the payload once, but the senders differ; the model does not follow
  them.

**Hosts and time** (:class:`Network`, :func:`phase_seconds`).  Ranks live on hosts (by
default one host per rank); a message between two ranks of one host does not touch the
network (shared memory) and is not counted.  Each host has a link of ``rate`` bit/s,
full duplex: a veth pair shaped by ``tbf`` on each side's egress shapes a host's sending
and its receiving separately.  With ``S_h``/``R_h`` the bytes host ``h`` sends/receives
in a phase, ``n^S_h``/``n^R_h`` its messages, ``e`` the achieved fraction of the rate
(TCP/IP framing, the MPI library) and ``alpha`` a per-message cost in seconds:

    t_h = max( 8 S_h / (e rate_h) + n^S_h alpha,  8 R_h / (e rate_h) + n^R_h alpha )
    T_phase = max( max_h t_h,  8 B / fabric )

(the slowest host ends the phase, or the capacity ``fabric`` that every byte ``B`` on
the network shares, when one is given: a switch's backplane, or on an emulated cluster
the machine forwarding every link; store-and-forward along a tree and latency beyond
``alpha`` are left out).

**Phases of the coded job** (:func:`coded_network`): ``distribution`` (0: every rank builds
``A``, the code and the vectors from the seed, ``runtime/coded/setup.py``), ``shuffle``
(the plan), ``gather`` (each reducer sends its ``m x N/q`` outputs to the master, rank 0).
The phase orders, ``MAP_END`` and the statistics records are left out (headers only,
milliseconds).

**The elastic job** (:func:`elastic_setup_traffic`, :func:`elastic_step_traffic`,
:func:`uncoded_move_traffic`, :func:`uncoded_step_traffic`): the coded blocks sent once
at setup; per step a task table and ``w_t`` to every planned machine, ``IDLE`` to the
others, the results (one message, or one per row set when ``S > 0``) and a statistics
record back; the uncoded baseline's moves (a table to every machine, the rows that change
owner from their previous owner or the master, an acknowledgement) and its tasks.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mpi_coded.cec.step_plan import StepPlan
from mpi_coded.cec.uncoded import MASTER, Layout, Move, moves, uncoded_split
from mpi_coded.errors import ConfigError, require
from mpi_coded.rates import format_rate, parse_rate

if TYPE_CHECKING:
    from mpi_coded.coded.mapend import MapEnd
    from mpi_coded.coded.params import CodedParams
    from mpi_coded.coded.placement import Placement
    from mpi_coded.coded.shuffle import ShufflePlan

HEADER_BYTES = 64
"""The runtime's message header: 8 int64 words (``runtime.core.wire.HEADER_WORDS``)."""
INLINE_BYTES = 4032
"""The largest payload the runtime sends inline, in the header's message
(``runtime.core.wire.INLINE_BYTES``)."""
META_WORDS = 14
"""float64 words of the elastic machines' statistics record (``records.TASK_META``: 8
statistics and 6 link counters)."""
ITEMSIZE = {"float64": 8, "gf2^8": 1, "gf2^16": 2}
"""Bytes per value of each field's dtype."""
MULTICAST_MODES = ("p2p", "bcast")
BCAST_TREES = ("binomial", "linear")


# --- the network -------------------------------------------------------------------------

@dataclass(frozen=True)
class Network:
    """Hosts, their link rates and the host of every rank.

    ``names[h]`` and ``rates[h]`` (bit/s) describe host ``h``; ``host_of[r]`` is the host
    of rank ``r``; ``alpha`` seconds per message; ``efficiency`` the achieved fraction of
    the rate, in ``(0, 1]``; ``fabric`` the capacity (bit/s) of what connects the hosts,
    shared by every byte on the network at once (a switch's backplane; on an emulated
    cluster the one machine that forwards every link's packets), None: unlimited.
    """

    names: tuple[str, ...]
    rates: tuple[float, ...]
    host_of: tuple[int, ...]
    alpha: float = 0.0
    efficiency: float = 1.0
    fabric: float | None = None

    def __post_init__(self) -> None:
        require(len(self.names) == len(self.rates), "rates", "one rate per host",
                len(self.rates))
        require(all(0 <= h < len(self.names) for h in self.host_of), "hosts",
                "every rank's host must exist", list(self.host_of))
        require(all(r > 0 for r in self.rates), "--rate", "must be > 0", list(self.rates))
        require(self.alpha >= 0, "--alpha", "must be a number of seconds >= 0", self.alpha)
        require(0 < self.efficiency <= 1, "efficiency", "must be in (0, 1]", self.efficiency)
        require(self.fabric is None or self.fabric > 0, "--fabric", "must be a rate > 0",
                self.fabric)

    @property
    def ranks(self) -> int:
        return len(self.host_of)

    def to_dict(self) -> dict[str, Any]:
        return {"hosts": {n: {"rate": format_rate(int(r)), "rate_bps": int(r),
                              "ranks": [k for k, h in enumerate(self.host_of) if h == i]}
                          for i, (n, r) in enumerate(zip(self.names, self.rates))},
                "alpha_s": self.alpha, "efficiency": self.efficiency,
                **({"fabric_bps": self.fabric} if self.fabric is not None else {})}


def coded_rank_name(rank: int) -> str:
    """The coded job's names: ``master`` (rank 0), ``server<s>`` (server ``s`` on rank
    ``s + 1``, 0-based as in docs/theory.md B)."""
    return "master" if rank == 0 else f"server{rank - 1}"


def elastic_rank_name(rank: int) -> str:
    """The elastic job's names: ``master`` (rank 0), ``machine<n>`` (machine ``n`` on
    rank ``n``, 1-based as in docs/theory.md A)."""
    return "master" if rank == 0 else f"machine{rank}"


def make_network(ranks: int, rate: str, rate_of: Sequence[str] = (), alpha: float = 0.0,
                 efficiency: float = 1.0, ranks_per_host: int | None = None,
                 rank_name: Any = coded_rank_name, fabric: float | None = None) -> Network:
    """A :class:`Network` from the command line's spelling.

    Hosts: one per rank, named by ``rank_name`` (``master``, ``server0``, ...); with
    ``ranks_per_host = R``, ``host1 .. hostH`` with ranks ``[(h-1) R, h R)`` on ``hosth``
    (mpiexec filling a hostfile's slots in order).  ``rate`` is every host's rate;
    ``rate_of`` items ``HOST=RATE`` override one host, ``HOST`` a host name, or
    ``rank<r>`` / a rank's own name (``master``, ``server3``) for the host of that rank.
    ``fabric``: the shared capacity in bit/s (:class:`Network`), None: unlimited.
    Bad input: one :class:`~mpi_coded.errors.ConfigError` naming ``--rate``,
    ``--rate-of``, ``--alpha``, ``--efficiency`` or ``--ranks-per-host``.
    """
    require(ranks >= 1, "ranks", "must be >= 1", ranks)
    default = parse_rate(rate, "--rate")
    if ranks_per_host is None:
        names = [rank_name(r) for r in range(ranks)]
        host_of = list(range(ranks))
    else:
        require(isinstance(ranks_per_host, int) and ranks_per_host >= 1, "--ranks-per-host",
                "must be an integer >= 1", ranks_per_host)
        hosts = -(-ranks // ranks_per_host)
        names = [f"host{h}" for h in range(1, hosts + 1)]
        host_of = [r // ranks_per_host for r in range(ranks)]
    rates = [float(default)] * len(names)
    for item in rate_of:
        key, sep, value = str(item).partition("=")
        require(bool(sep) and bool(key.strip()), "--rate-of", "must be HOST=RATE", item)
        h = _host_index(key.strip(), names, host_of, rank_name)
        require(h is not None, "--rate-of",
                f"must name a host ({_host_names(names)}) or a rank (rank0..rank{ranks - 1})",
                key.strip())
        assert h is not None
        rates[h] = float(parse_rate(value, "--rate-of"))
    require(isinstance(alpha, (int, float)) and alpha >= 0, "--alpha",
            "must be a number of seconds >= 0", alpha)
    require(isinstance(efficiency, (int, float)) and 0 < efficiency <= 1, "--efficiency",
            "must be a number in (0, 1]", efficiency)
    return Network(tuple(names), tuple(rates), tuple(host_of), float(alpha), float(efficiency),
                   None if fabric is None else float(fabric))


def _host_names(names: Sequence[str]) -> str:
    return ", ".join(names) if len(names) <= 4 else f"{names[0]}, {names[1]}, ..., {names[-1]}"


def _host_index(key: str, names: Sequence[str], host_of: Sequence[int],
                rank_name: Any) -> int | None:
    if key in names:
        return names.index(key)
    m = re.fullmatch(r"rank([0-9]+)", key)
    if m and int(m.group(1)) < len(host_of):
        return host_of[int(m.group(1))]
    for r, h in enumerate(host_of):
        if rank_name(r) == key:
            return h
    return None


# --- traffic -----------------------------------------------------------------------------

@dataclass(frozen=True)
class HostTraffic:
    """What one host sends and receives over its link in one phase."""

    sent_bytes: int = 0
    recv_bytes: int = 0
    sent_messages: int = 0
    recv_messages: int = 0
    sent_copies: int = 0
    """Payloads sent: a runtime message's header and payload are one copy, so is one
    edge of a broadcast tree (a header alone is none)."""
    recv_copies: int = 0

    def seconds(self, rate: float, alpha: float = 0.0, efficiency: float = 1.0) -> float:
        """``max(8 S / (e rate) + n_S alpha, 8 R / (e rate) + n_R alpha)`` (full duplex)."""
        bw = rate * efficiency
        return max(8 * self.sent_bytes / bw + self.sent_messages * alpha,
                   8 * self.recv_bytes / bw + self.recv_messages * alpha)


@dataclass
class Traffic:
    """Messages between ranks: ``edges[(src, dst)] = [bytes, messages]``, and
    ``copies[(src, dst)]`` the payloads among them (:attr:`HostTraffic.sent_copies`)."""

    edges: dict[tuple[int, int], list[int]] = field(
        default_factory=lambda: defaultdict(lambda: [0, 0]))
    copies: dict[tuple[int, int], int] = field(default_factory=lambda: defaultdict(int))

    def add(self, src: int, dst: int, nbytes: int, messages: int = 1, copies: int = 0
            ) -> None:
        e = self.edges[(src, dst)]
        e[0] += int(nbytes)
        e[1] += int(messages)
        if copies:
            self.copies[(src, dst)] += int(copies)

    def message(self, src: int, dst: int, values: int | None, itemsize: int,
                inline: bool = True) -> None:
        """One runtime message: a header, and a payload of ``values`` unless None (inline
        when it fits :data:`INLINE_BYTES` and ``inline``: one MPI message, the payload
        padded to whole int64 words)."""
        if values is None:
            self.add(src, dst, HEADER_BYTES, 1)
        elif inline and values * itemsize <= INLINE_BYTES:
            self.add(src, dst, HEADER_BYTES + -(-values * itemsize // 8) * 8, 1, copies=1)
        else:
            self.add(src, dst, HEADER_BYTES + values * itemsize, 2, copies=1)

    def bundle(self, src: int, dst: int, parts: Sequence[tuple[int | None, int]]) -> None:
        """Runtime messages ``(values, itemsize)`` from ``src`` to ``dst``, one right after
        the other: one MPI message (a bundle) when each is inline and together, headers and
        padded payloads, they fit :data:`HEADER_BYTES` + :data:`INLINE_BYTES`; else each
        its own (:meth:`message`)."""
        sizes = [HEADER_BYTES + (0 if v is None else -(-v * k // 8) * 8) for v, k in parts]
        if all(v is None or v * k <= INLINE_BYTES for v, k in parts) and \
                sum(sizes) <= HEADER_BYTES + INLINE_BYTES:
            self.add(src, dst, sum(sizes), 1, copies=sum(v is not None for v, _ in parts))
            return
        for v, k in parts:
            self.message(src, dst, v, k)

    def merged(self, other: Traffic) -> Traffic:
        out = Traffic()
        for t in (self, other):
            for (s, d), (b, n) in t.edges.items():
                out.add(s, d, b, n, t.copies.get((s, d), 0))
        return out

    @property
    def total_bytes(self) -> int:
        """Bytes of every message (each copy counted), whatever the hosts."""
        return sum(b for b, _ in self.edges.values())

    @property
    def total_messages(self) -> int:
        return sum(n for _, n in self.edges.values())

    def by_rank(self) -> dict[int, HostTraffic]:
        """Per rank (every message counted, as if each rank had its own host)."""
        return self._fold(lambda r: r, lambda s, d: s == d)

    def by_host(self, net: Network) -> dict[int, HostTraffic]:
        """Per host of ``net``; messages inside one host are not on the network."""
        return self._fold(lambda r: net.host_of[r], lambda s, d: net.host_of[s] ==
                          net.host_of[d])

    def _fold(self, where: Any, local: Any) -> dict[int, HostTraffic]:
        acc: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0])
        for (s, d), (b, n) in self.edges.items():
            if local(s, d):
                continue
            a, z = acc[where(s)], acc[where(d)]
            c = self.copies.get((s, d), 0)
            a[0] += b
            a[2] += n
            a[4] += c
            z[1] += b
            z[3] += n
            z[5] += c
        return {h: HostTraffic(*v) for h, v in sorted(acc.items())}


@dataclass(frozen=True)
class PhaseCost:
    """A phase priced on a network: its seconds, the slowest host, every host's traffic."""

    seconds: float
    slowest: str | None
    hosts: dict[str, HostTraffic]
    host_seconds: dict[str, float]
    total_bytes: int  # every copy of every message, on the network or not
    network_bytes: int  # bytes sent over host links
    fabric_seconds: float | None = None  # 8 network_bytes / fabric (None: unlimited)

    def to_dict(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "slowest_host": self.slowest,
                **({"fabric_seconds": self.fabric_seconds,
                    "limited_by": ("fabric" if self.seconds == self.fabric_seconds
                                   and self.seconds > 0 else "host")}
                   if self.fabric_seconds is not None else {}),
                "bytes_on_wire": self.network_bytes, "bytes_total": self.total_bytes,
                "hosts": {n: {"sent_bytes": t.sent_bytes, "recv_bytes": t.recv_bytes,
                              "sent_messages": t.sent_messages,
                              "recv_messages": t.recv_messages,
                              "sent_copies": t.sent_copies,
                              "recv_copies": t.recv_copies,
                              "seconds": self.host_seconds[n]}
                          for n, t in self.hosts.items()}}


def phase_seconds(traffic: Traffic, net: Network) -> PhaseCost:
    """``T = max(max_h t_h, 8 B / fabric)`` (module docstring) with every host's traffic,
    ``B`` the bytes on the network; ``slowest`` is the slowest host (``limited_by`` in the
    dict says whether it or the fabric ends the phase)."""
    require(all(0 <= r < net.ranks for e in traffic.edges for r in e), "network",
            f"the traffic names ranks beyond the network's {net.ranks}",
            sorted({r for e in traffic.edges for r in e}))
    per = traffic.by_host(net)
    hosts = {net.names[h]: t for h, t in per.items()}
    secs = {net.names[h]: t.seconds(net.rates[h], net.alpha, net.efficiency)
            for h, t in per.items()}
    slowest = max(secs, key=lambda n: secs[n]) if secs else None
    seconds = secs[slowest] if slowest is not None else 0.0
    on_net = sum(t.sent_bytes for t in per.values())
    fab = None if net.fabric is None else 8 * on_net / net.fabric
    return PhaseCost(max(seconds, fab or 0.0), slowest, hosts, secs, traffic.total_bytes,
                     on_net, fab)


def bytes_by_host(traffic: Traffic, host_of: Mapping[int, str],
                 hosts: Iterable[str] | None = None) -> dict[str, list[int] | None]:
    """``[sent, received]`` bytes per host name of ``traffic`` (messages between ranks;
    ``host_of[rank]`` its host, messages inside a host left out), every host of ``hosts``
    (default: of ``host_of``) listed, ``[0, 0]`` if idle: the ``plan_bytes`` the runtime
    records beside the interfaces' counts."""
    names = sorted(set(host_of.values()) | set(hosts or ()))
    ranks = max(host_of) + 1 if host_of else 0
    net = Network(tuple(names), (1.0,) * len(names),
                  tuple(names.index(host_of[r]) for r in range(ranks)))
    per = traffic.by_host(net)
    return {n: [per[i].sent_bytes, per[i].recv_bytes] if i in per else [0, 0]
            for i, n in enumerate(names)}


# --- the coded job -----------------------------------------------------------------------

def bcast_edges(group_size: int, root: int, tree: str = "binomial") -> list[tuple[int, int]]:
    """``(parent, child)`` indices into the group of a broadcast tree rooted at ``root``
    (module docstring): binomial, ``rel`` receiving from ``rel - lowbit(rel)``; linear,
    the root to everyone."""
    require(tree in BCAST_TREES, "bcast_tree", f"must be one of {', '.join(BCAST_TREES)}",
            tree)
    g = group_size
    out = []
    for rel in range(1, g):
        parent = rel - (rel & -rel) if tree == "binomial" else 0
        out.append(((parent + root) % g, (rel + root) % g))
    return out


def shuffle_traffic(plan: ShufflePlan, itemsize: int, multicast: str = "p2p",
                    bcast_tree: str = "binomial") -> Traffic:
    """Every message of ``plan`` between ranks (server ``s`` on rank ``s + 1``): each
    multicast as ``multicast`` carries it (module docstring), each unicast a header and
    its values; payloads are ``values x itemsize`` bytes, multicasts at their padded
    length."""
    # deferred: the coded job's modules, off an elastic rank's path (its start)
    from mpi_coded.coded.placement import rank_of

    require(multicast in MULTICAST_MODES, "--multicast",
            f"must be one of {', '.join(MULTICAST_MODES)}", multicast)
    t = Traffic()
    for mc in plan.multicasts:
        if multicast == "p2p":
            for k in mc.receivers:
                t.message(rank_of(mc.sender), rank_of(k), mc.length, itemsize, inline=False)
            continue
        root = mc.group.index(mc.sender)
        for a, b in bcast_edges(len(mc.group), root, bcast_tree):
            t.add(rank_of(mc.group[a]), rank_of(mc.group[b]), mc.length * itemsize, 1,
                  copies=1)
    for u in plan.unicasts:
        t.message(rank_of(u.sender), rank_of(u.receiver), u.size, itemsize, inline=False)
    return t


def gather_traffic(plan: ShufflePlan, itemsize: int) -> Traffic:
    """Each reducer's ``OUTPUT`` to the master: its ``m x (out_stop - out_start)`` values."""
    # deferred: the coded job's modules, off an elastic rank's path (its start)
    from mpi_coded.coded.placement import rank_of

    t = Traffic()
    for red in plan.reducers:
        t.message(rank_of(red.server), MASTER, plan.m * (red.out_stop - red.out_start),
                  itemsize)
    return t


def runnable_params(p: CodedParams) -> CodedParams:
    """The runnable job of an analytic setting's sizes (``m``, ``n``, ``N``, ``T``, field):
    the network model counts the messages of a job the runtime can run, so its rules
    apply (``Scheme.rows_per_batch_for``, ``Scheme.params``); a broken one is the
    :class:`~mpi_coded.errors.ConfigError` of that rule, saying why it applies."""
    spec = p.spec
    try:
        eta = spec.rows_per_batch_for(p.K, p.q, p.mu, p.m)
        return spec.params(p.K, p.q, p.mu, eta, p.n, p.N, p.T, p.field)
    except ConfigError as exc:
        raise ConfigError(exc.field, f"{exc.rule} (the network model counts the messages "
                          f"of a job {spec.name} can run)", exc.got) from None


def model_plan(placement: Placement, order: Sequence[int] | None = None) -> ShufflePlan:
    """The plan the runtime builds for the finishing order ``order`` (default: servers
    ``0, 1, ..., K-1``): ``map_end`` gives ``(Q, extra)``, ``shuffle_plan`` the plan, the
    same two calls as ``runtime/coded``."""
    # deferred: the coded job's modules, off an elastic rank's path (its start)
    from mpi_coded.coded.mapend import map_end
    from mpi_coded.coded.shuffle import shuffle_plan

    end: MapEnd = map_end(placement, list(range(placement.K)) if order is None else order)
    return shuffle_plan(placement, end)


@dataclass(frozen=True)
class CodedNetwork:
    """The coded job's network phases for one plan."""

    plan: ShufflePlan
    field: str
    itemsize: int
    multicast: str
    bcast_tree: str
    phases: dict[str, PhaseCost]

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.phases.values())

    def to_dict(self) -> dict[str, Any]:
        return {"multicast": self.multicast,
                **({"bcast_tree": self.bcast_tree} if self.multicast == "bcast" else {}),
                "field": self.field, "itemsize": self.itemsize,
                "Q": list(self.plan.Q), "extra": list(self.plan.extra),
                "shuffle_values": self.plan.values,
                "seconds": {**{k: p.seconds for k, p in self.phases.items()},
                            "total": self.seconds},
                "phases": {k: p.to_dict() for k, p in self.phases.items()}}


def coded_network(placement: Placement, net: Network, multicast: str = "p2p",
                  bcast_tree: str = "binomial", order: Sequence[int] | None = None
                  ) -> CodedNetwork:
    """The coded job's distribution (0), shuffle and gather priced on ``net`` (``K + 1``
    ranks), for the plan of :func:`model_plan`."""
    p = placement.params
    require(net.ranks == p.K + 1, "network", f"must have K + 1 = {p.K + 1} ranks", net.ranks)
    fname = p.field_name
    item = ITEMSIZE[fname]
    plan = model_plan(placement, order)
    phases = {"distribution": phase_seconds(Traffic(), net),
              "shuffle": phase_seconds(shuffle_traffic(plan, item, multicast, bcast_tree),
                                       net),
              "gather": phase_seconds(gather_traffic(plan, item), net)}
    return CodedNetwork(plan, fname, item, multicast, bcast_tree, phases)


# --- the elastic job ---------------------------------------------------------------------

def elastic_setup_traffic(machines: Iterable[int], blocks: Sequence[tuple[int, int]],
                          itemsize: int) -> Traffic:
    """Coded elastic setup: the master sends every machine its coded block of each shape in
    ``blocks`` (``(rows_per_block, cols)``; linreg also ``X^T``'s), once."""
    t = Traffic()
    for n in machines:
        for rows, cols in blocks:
            t.message(MASTER, n, rows * cols, itemsize)
    return t


def elastic_step_traffic(plan: StepPlan, cols: int, itemsize: int,
                         idle: Iterable[int] = ()) -> Traffic:
    """One coded elastic step (integer rows): ``TASK`` (its row-set table, ``k x 2``
    int64, ``k x 3`` when ``S > 0``) and ``VECTOR`` (``cols`` values) to every planned
    machine, ``IDLE`` to ``idle``; back ``RESULT`` (its rows' values; one ``PART`` per
    row set when ``S > 0``) and ``META`` (:data:`META_WORDS` float64).  The TASK and its
    ``VECTOR``, and with ``S = 0`` the RESULT and META, travel as one bundle each when they
    fit together (:meth:`Traffic.bundle`)."""
    require(plan.rows is not None, "rows", "the network model needs a plan in integer rows",
            None)
    t = Traffic()
    per_set = plan.S > 0
    ranges = plan.ranges_by_machine()
    for n in plan.available:
        mine = [(a, b) for a, b in ranges.get(n, []) if b > a]
        # the int64 table and w_t, in one bundle when they fit together
        t.bundle(MASTER, n, [(len(mine) * (3 if per_set else 2), 8), (cols, itemsize)])
        if per_set:
            for a, b in mine:
                t.message(n, MASTER, int(b - a), itemsize)
            t.message(n, MASTER, META_WORDS, 8)
        else:  # the rows' values and the statistics, in one bundle when they fit
            t.bundle(n, MASTER, [(sum(int(b - a) for a, b in mine), itemsize),
                                 (META_WORDS, 8)])
    for n in idle:
        t.message(MASTER, n, None, itemsize)
    return t


def uncoded_move_traffic(layout: Layout, moves: Sequence[Move], cols: int, itemsize: int,
                         idle: Iterable[int] = ()) -> Traffic:
    """The uncoded baseline's moves of one step: a ``MOVES`` table to every machine of
    ``layout`` (``1 +`` its moves, 4 int64 each), ``IDLE`` to ``idle``, every moved row
    range (``cols`` values a row) from its source (0: the master) and an acknowledgement
    (a header) from every machine."""
    t = Traffic()
    for n in sorted(layout):
        mine = sum(1 for m in moves if n in (m.src, m.dst))
        t.message(MASTER, n, (1 + mine) * 4, 8)
    for n in idle:
        t.message(MASTER, n, None, itemsize)
    for m in moves:
        t.message(m.src, m.dst, (m.stop - m.start) * cols, itemsize)
    for n in sorted(layout):
        t.message(n, MASTER, None, itemsize)
    return t


def uncoded_step_traffic(layout: Layout, cols: int, itemsize: int) -> Traffic:
    """The uncoded baseline's products of one step: ``TASK`` (one range, 2 int64) and
    ``VECTOR`` to every machine of ``layout``, ``RESULT`` (its rows) and ``META`` back (one
    bundle when they fit together, :meth:`Traffic.bundle`)."""
    t = Traffic()
    for n, (a, b) in sorted(layout.items()):
        t.bundle(MASTER, n, [(2, 8), (cols, itemsize)])  # TASK and VECTOR
        t.bundle(n, MASTER, [(b - a, itemsize), (META_WORDS, 8)])  # RESULT and META
    return t


def price(phases: Mapping[str, Traffic], net: Network) -> dict[str, PhaseCost]:
    """Every phase of ``phases`` priced on ``net``."""
    return {k: phase_seconds(t, net) for k, t in phases.items()}


# --- the model's report ------------------------------------------------------------------

def uc_reference(p: CodedParams) -> CodedParams:
    """The uncoded job at ``p``'s ``K``, ``q``, ``mu``, ``m``, ``n``, ``N``, in ``p``'s
    field (so that the ratios compare values of one size)."""
    # deferred: the coded schemes, off an elastic rank's path (its start)
    from mpi_coded.coded.params import CodedParams
    from mpi_coded.coded.schemes import get

    uc = get("uc")
    return runnable_params(CodedParams(uc, p.K, p.q, p.mu, p.m, p.n, p.N, 1, p.field_name))


@dataclass(frozen=True)
class FittedShuffle:
    """The shuffle fitted on the job's training runs (docs/theory.md (B.8))."""

    seconds: float
    fit: Any
    """The :class:`~mpi_coded.analysis.shuffle_fit.ShuffleFit` used."""

    def to_dict(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "fit": self.fit.to_dict()}


@dataclass(frozen=True)
class OverUc:
    """The coded shuffle over uc's at the same sizes and field (None: uc's is 0)."""

    shuffle_s: float | None
    shuffle_bytes: float | None
    load: float | None
    """The plain load ratio (a multicast counted once: a broadcast medium)."""
    uc_shuffle_s: float | None = None
    uc_shuffle_bytes: int | None = None
    shuffle_fitted_s: float | None = None
    """With a fit: the fitted shuffle's ratio (absent from the dict without one)."""
    fitted: bool = False
    uc_not_runnable: str | None = None
    """Why uc cannot run at these sizes (then there is no ratio)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"shuffle_s": self.shuffle_s,
                               "shuffle_bytes": self.shuffle_bytes, "load": self.load}
        if self.uc_not_runnable is not None:
            out["uc_not_runnable"] = self.uc_not_runnable
            return out
        out.update(uc_shuffle_s=self.uc_shuffle_s, uc_shuffle_bytes=self.uc_shuffle_bytes)
        if self.fitted:
            out["shuffle_fitted_s"] = self.shuffle_fitted_s
        return out


@dataclass(frozen=True)
class NetworkReport:
    """``model --rate``'s ``network`` object (:func:`network_report`; :meth:`to_dict`)."""

    network: Network
    coded: CodedNetwork
    over_uc: OverUc
    shuffle_fitted: FittedShuffle | None = None

    def to_dict(self) -> dict[str, Any]:
        return {**self.network.to_dict(), **self.coded.to_dict(),
                **({"shuffle_fitted": self.shuffle_fitted.to_dict()}
                   if self.shuffle_fitted is not None else {}),
                "over_uc": self.over_uc.to_dict()}


def network_report(p: CodedParams, net: Network, multicast: str = "p2p",
                   bcast_tree: str = "binomial", order: Sequence[int] | None = None,
                   assignment: Any = None, fit: Any = None) -> NetworkReport:
    """``model --rate``'s ``network`` object: the network (hosts, rates, ``alpha``,
    efficiency), the coded job's phases priced on it (:func:`coded_network`) and, beside
    the uncoded job's at the same sizes and field (:func:`uc_reference`, same ``order``),
    ``over_uc``: the shuffle's seconds and bytes on the wire over uc's, and the plain load
    ratio (a multicast counted once: what a broadcast medium would give).  With ``fit``
    (a :class:`~mpi_coded.analysis.shuffle_fit.ShuffleFit` from the calibration file),
    ``shuffle_fitted`` holds the shuffle fitted on the job's training runs ((B.8)) and
    ``over_uc`` its ratio too.  A :class:`NetworkReport`; its ``to_dict()`` is the JSON
    object."""
    # deferred: the coded job's modules, off an elastic rank's path (its start)
    from mpi_coded.coded.placement import build_placement

    job = runnable_params(p)
    cn = coded_network(build_placement(job, assignment), net, multicast, bcast_tree, order)
    fitted = (FittedShuffle(fit.seconds(cn.phases["shuffle"]), fit)
              if fit is not None else None)
    try:
        ucp = uc_reference(job)
    except ConfigError as exc:  # uc cannot run at these sizes: no ratio
        return NetworkReport(net, cn, OverUc(None, None, None, uc_not_runnable=str(exc)),
                             fitted)
    uc = coded_network(build_placement(ucp), net, multicast, bcast_tree, order)
    mine, ref = cn.phases["shuffle"], uc.phases["shuffle"]
    fitted_s = None
    if fitted is not None:
        ref_fit = fit.seconds(ref)
        fitted_s = fitted.seconds / ref_fit if ref_fit > 0 else None
    over = OverUc(
        shuffle_s=mine.seconds / ref.seconds if ref.seconds > 0 else None,
        shuffle_bytes=(mine.network_bytes / ref.network_bytes
                       if ref.network_bytes > 0 else None),
        load=float(cn.plan.load / uc.plan.load) if uc.plan.load > 0 else None,
        uc_shuffle_s=ref.seconds, uc_shuffle_bytes=ref.network_bytes,
        shuffle_fitted_s=fitted_s, fitted=fitted is not None)
    return NetworkReport(net, cn, over, fitted)


def link_calibration(doc: Mapping[str, Any], rate: float | None = None
                     ) -> tuple[float | None, float | None]:
    """``(alpha_s, efficiency)`` of a calibration file's optional ``network`` object
    (``{"alpha_s": seconds per message, "efficiency": achieved fraction of the rate}``,
    measured on the emulated network by ``scripts/bench_network.py``); None where absent.

    The object may also hold ``by_rate``, ``{RATE: {"alpha_s", "efficiency"}}`` (tc
    units): the pair measured at each link rate (on one machine the achieved fraction
    falls as the rate rises: the hosts share its cores).  With ``rate`` (bit/s) the pair
    of the entry at that rate is returned when there is one, else the top-level pair.
    Bad values: ConfigError naming ``calibration``."""
    netdoc = doc.get("network")
    if netdoc is None:
        return None, None
    require(isinstance(netdoc, dict), "calibration", "network must be an object", netdoc)
    chosen: Mapping[str, Any] = netdoc
    by_rate = netdoc.get("by_rate")
    if by_rate is not None:
        require(isinstance(by_rate, dict) and all(isinstance(v, dict)
                                                  for v in by_rate.values()),
                "calibration", "network.by_rate must map rates to objects", by_rate)
        if rate is not None:
            for key, entry in by_rate.items():
                if parse_rate(str(key), "calibration") == int(rate):
                    chosen = {**netdoc, **entry}
                    break
    alpha, eff = chosen.get("alpha_s"), chosen.get("efficiency")
    for key, val, ok in (("alpha_s", alpha, lambda v: v >= 0),
                         ("efficiency", eff, lambda v: 0 < v <= 1)):
        require(val is None or (isinstance(val, (int, float)) and not isinstance(val, bool)
                                and ok(val)), "calibration",
                f"network.{key} must be a number " + (">= 0" if key == "alpha_s"
                                                      else "in (0, 1]"), val)
    return (None if alpha is None else float(alpha)), (None if eff is None else float(eff))


def rate_entry(netdoc: Any, rate: float | None) -> Mapping[str, Any] | None:
    """A calibration file's ``network`` object as seen at ``rate`` (bit/s): its top-level
    values overridden by the ``by_rate`` entry at that rate when there is one; None when
    ``netdoc`` is not an object."""
    if not isinstance(netdoc, Mapping):
        return None
    by_rate = netdoc.get("by_rate")
    if isinstance(by_rate, Mapping) and rate is not None:
        for key, entry in by_rate.items():
            if isinstance(entry, Mapping) and parse_rate(str(key), "calibration") == int(rate):
                return {**netdoc, **entry}
    return netdoc


def link_fabric(doc: Mapping[str, Any], rate: float | None = None) -> float | None:
    """``fabric_bps`` of a calibration file's ``network`` object (the shared capacity,
    :class:`Network`; of the ``by_rate`` entry at ``rate`` when there is one), None where
    absent.  Bad values: ConfigError naming ``calibration``."""
    chosen = rate_entry(doc.get("network"), rate)
    if chosen is None:
        return None
    val = chosen.get("fabric_bps")
    require(val is None or (isinstance(val, (int, float)) and not isinstance(val, bool)
                            and val > 0), "calibration",
            "network.fabric_bps must be a number > 0", val)
    return None if val is None else float(val)


def elastic_report(plan: StepPlan, speeds: Mapping[int, Any], cols: int, field_name: str,
                   net: Network, prev_available: Sequence[int] | None = None
                   ) -> dict[str, Any]:
    """``plan cec --rate``'s ``network`` object for one step of ``N`` machines (``net`` has
    ``N + 1`` ranks): the coded job's setup (every coded block once) and this step
    (``plan``, in integer rows), and the uncoded baseline on the same ``L R`` rows of ``X``:
    its setup (every row from the master), its moves from the split over
    ``prev_available`` (default: every machine) to this step's, and its products."""
    require(plan.rows is not None, "--rows", "the network model needs a plan in integer rows",
            None)
    assert plan.rows is not None
    item = ITEMSIZE[field_name]
    machines = sorted(speeds)
    require(net.ranks == len(machines) + 1, "network",
            f"must have N + 1 = {len(machines) + 1} ranks", net.ranks)
    idle = [n for n in machines if n not in plan.available]
    rows = plan.L * plan.rows
    before = uncoded_split(speeds, machines if prev_available is None else prev_available,
                           rows)
    now = uncoded_split(speeds, plan.available, rows)
    mv = moves(before, now)
    first = moves(None, before)
    coded = price({"setup": elastic_setup_traffic(machines, [(plan.rows, cols)], item),
                   "step": elastic_step_traffic(plan, cols, item, idle)}, net)
    uncoded = price({"setup": uncoded_move_traffic(before, first, cols, item),
                     "moves": uncoded_move_traffic(now, mv, cols, item, idle),
                     "step": uncoded_step_traffic(now, cols, item)}, net)
    return {**net.to_dict(), "field": field_name, "itemsize": item, "cols": cols,
            "coded": {k: c.to_dict() for k, c in coded.items()},
            "uncoded": {**{k: c.to_dict() for k, c in uncoded.items()},
                        "bytes_moved": sum((m.stop - m.start) * cols * item for m in mv)},
            "seconds": {"coded_step": coded["step"].seconds,
                        "uncoded_step": uncoded["moves"].seconds + uncoded["step"].seconds,
                        "coded_setup": coded["setup"].seconds,
                        "uncoded_setup": uncoded["setup"].seconds}}
