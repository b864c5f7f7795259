"""``mpi-coded store write`` and ``mpi-coded store check`` (pure: files, no MPI)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import socket
import sys
import time
from pathlib import Path
from typing import Any

from mpi_coded.cec.config import load_config, npy_shape
from mpi_coded.cec.data import make_data
from mpi_coded.cec.workloads import WORKLOADS
from mpi_coded.errors import ConfigError, require
from mpi_coded.fields import get_field
from mpi_coded.store.blocks import Expect, scan, verify
from mpi_coded.store.encode import placement, write_store
from mpi_coded.store.manifest import MANIFEST, host_dir
from mpi_coded.store.source import ArrayRows, NpyRows


def _ints(text: str | None, name: str, N: int) -> list[int]:
    if not text:
        return list(range(1, N + 1))
    try:
        out = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise ConfigError(name, "must be comma-separated machine ids", text) from None
    for n in out:
        require(1 <= n <= N, name, f"machine ids are 1..N={N}", n)
    return out


def _job(args: argparse.Namespace) -> Any:
    cfg = load_config(args.config)
    if getattr(args, "data", None):
        shape, _ = npy_shape(args.data)
        require(len(shape) == 2, "--data", "must hold a 2-D matrix X", shape)
        cfg = dataclasses.replace(cfg, data=args.data, rows=shape[0], cols=shape[1]).validate()
    return cfg


def cmd_store_write(args: argparse.Namespace) -> int:
    cfg = _job(args)
    field = get_field(cfg.field)
    hosts = [h for h in (args.hosts or "").split(",") if h]
    require("{host}" in args.out or not (hosts or args.place), "--out",
            "must contain {host} when --hosts or --place spread the blocks over hosts", args.out)
    where = placement(cfg.N, hosts, args.place or [])
    machines = _ints(args.machines, "--machines", cfg.N)
    if args.this_host:
        here = socket.gethostname()
        machines = [n for n in machines if where[n] == here]
    if args.if_missing:  # a directory with a manifest holds a store: the job checks it
        machines = [n for n in machines if not (host_dir(args.out, where[n]) / MANIFEST).exists()]
    if not machines:  # nothing to write here: X is not read
        print(json.dumps({"store": args.out, "dirs": [], "machines": [], "bytes": 0,
                          "seconds": 0.0}))
        return 0
    transpose = args.transpose or WORKLOADS.lookup(cfg.workload).products == 2
    src = NpyRows(cfg.data, field.dtype) if cfg.data else \
        ArrayRows(make_data(cfg, field), f"seed {cfg.seed}")
    t0 = time.perf_counter()
    dirs = write_store(src, field, cfg.L, cfg.N, args.out, where, machines, transpose,
                       seed=cfg.seed, progress=None if args.progress else lambda s: None)
    secs = time.perf_counter() - t0
    nbytes = sum(p.stat().st_size for d in dirs for p in Path(d).glob("block-*.npy"))
    print(json.dumps({"store": args.out, "dirs": [str(d) for d in dirs], "machines": machines,
                      "field": cfg.field, "rows": cfg.rows, "cols": cfg.cols, "L": cfg.L,
                      "N": cfg.N, "transpose": transpose, "bytes": nbytes,
                      "seconds": round(secs, 3)}))
    return 0


def cmd_store_check(args: argparse.Namespace) -> int:
    """Scan a host's store directory against the job, read each block against its
    checksums (marking those that pass, :mod:`mpi_coded.store.marks`); exit 1 when any
    block is unusable."""
    cfg = _job(args)
    want = Expect(get_field(cfg.field), cfg.rows, cfg.cols, cfg.L, cfg.N,
                  WORKLOADS.lookup(cfg.workload).products == 2, None)
    host = args.host or socket.gethostname()
    hb = scan(args.store, host, want)
    problems = list(hb.problems)
    good = []
    for n in hb.held:
        bad = verify(hb, n)
        if bad:
            problems.append(bad)
        else:
            good.append(n)
    for p in problems:
        print(f"mpi-coded: store: {p}", file=sys.stderr)
    print(json.dumps({"dir": str(hb.directory), "host": host, "verified": good,
                      "problems": len(problems)}))
    return 1 if problems or not good else 0


def register(sub: Any) -> None:
    p = sub.add_parser("store", help="a coded store on the machines' disks (docs/storage.md)")
    ssub = p.add_subparsers(dest="store_kind", required=True, parser_class=type(p))
    w = ssub.add_parser("write", help="encode X once into one coded block file per machine")
    w.add_argument("--config", default=None, help="the elastic job's TOML config (field, L, N, "
                   "rows, cols, seed or data, workload)")
    w.add_argument("--data", default=None, help="override: the .npy file of X (streamed in "
                   "row chunks)")
    w.add_argument("--out", required=True, metavar="DIR", help="the store directory; {host} "
                   "in it is each host's name")
    w.add_argument("--hosts", default=None, help="comma-separated hosts: machine n's block goes "
                   "to host (n - 1) mod len(hosts)")
    w.add_argument("--place", action="append", default=None, metavar="HOST:1,2",
                   help="these machines' blocks on this host (repeatable; before --hosts)")
    w.add_argument("--machines", default=None, help="write only these machines' blocks "
                   "(comma-separated; default all)")
    w.add_argument("--this-host", dest="this_host", action="store_true",
                   help="write only the blocks placed on this host (one writer per node, "
                        "e.g. srun --ntasks-per-node=1 under SLURM)")
    w.add_argument("--if-missing", dest="if_missing", action="store_true",
                   help="write only into directories that hold no manifest yet (a store "
                        "there is left as it is: the job checks it and repairs what it lacks)")
    w.add_argument("--transpose", action="store_true", help="also blocks of X^T (default: when "
                   "the workload needs them, linreg)")
    w.add_argument("--progress", action="store_true", help="print progress on stderr")
    w.set_defaults(func=cmd_store_write)
    c = ssub.add_parser("check", help="read every block of a host's store directory against "
                        "its checksum and the job's config")
    c.add_argument("--config", default=None, help="the elastic job's TOML config")
    c.add_argument("--data", default=None, help="override: the .npy file of X")
    c.add_argument("--store", required=True, metavar="DIR", help="the store ({host}: see "
                   "--host)")
    c.add_argument("--host", default=None, help="the host whose directory to check (default "
                   "this one)")
    c.set_defaults(func=cmd_store_check)
