"""Fuzzing the command line and the config files: every input either runs or ends
with one line on stderr and exit status 2; never a traceback, never a hang.

``run`` commands are called in this process: a bad config fails before MPI is
touched, and a good one fails the world-size check (this process is a world of
one), in both cases before any MPI traffic.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpi_coded.cli import main

NUM_TEXT = st.one_of(st.integers(-3, 12).map(str), st.sampled_from(
    ["1.5", "0", "-1", "1/2", "2/3", "x", "", "nan", "inf", "1e9", "1/0", " 3 ", "٣"]))
INTS = st.one_of(st.integers(-2, 12), st.sampled_from([10**6, -10**6]))


def call(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = int(exc.code or 0)
    return rc, out.getvalue(), err.getvalue()


def check(rc: int, out: str, err: str, may_succeed: bool) -> None:
    assert "Traceback" not in err
    if rc == 0:
        assert may_succeed, err
        return
    assert rc == 2, (rc, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("mpi-coded") and "error:" in lines[0]


@settings(max_examples=120, deadline=None)
@given(speeds=st.lists(NUM_TEXT, max_size=7), L=INTS.map(str) | NUM_TEXT,
       avail=st.lists(INTS, max_size=7), rows=st.none() | INTS,
       policy=st.sampled_from(["heterogeneous", "cyclic", "best"]), as_json=st.booleans())
def test_fuzz_plan_cec(speeds, L, avail, rows, policy, as_json):
    argv = ["plan", "cec", "--speeds", ",".join(speeds), "--L", L, "--policy", policy]
    if avail:
        argv += ["--available", ",".join(map(str, avail))]
    if rows is not None:
        argv += ["--rows", str(rows)]
    if as_json:
        argv.append("--json")
    rc, out, err = call(argv)
    check(rc, out, err, may_succeed=True)
    if rc == 0 and as_json:
        d = json.loads(out)
        assert sum(1 for _ in d["sets"]) <= len(d["available"])


@settings(max_examples=120, deadline=None)
@given(scheme=st.sampled_from(["uc", "cmr", "sc", "unified", "bdc", "lt"]), K=INTS, q=INTS,
       mu=NUM_TEXT)
def test_fuzz_load(scheme, K, q, mu):
    rc, out, err = call(["load", "--scheme", scheme, "--K", str(K), "--q", str(q), "--mu", mu,
                         "--json"])
    check(rc, out, err, may_succeed=True)
    if rc == 0:
        assert 0 <= json.loads(out)["load"] <= 1


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else "nan"
    if isinstance(v, (int,)):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    return "[" + ", ".join(toml_value(x) for x in v) + "]"


SCALARS = st.one_of(st.integers(-3, 20), st.floats(-2, 5, allow_nan=False), st.booleans(),
                    st.sampled_from(["float64", "gf2^8", "gf2^16", "cyclic", "heterogeneous",
                                     "x", ""]))
VALUES = st.one_of(SCALARS, st.lists(st.one_of(st.integers(-1, 8), st.floats(0, 3)),
                                     max_size=8),
                   st.lists(st.lists(st.integers(0, 8), max_size=7), max_size=4))
CEC_KEYS = st.sampled_from(["N", "L", "speeds", "rows", "cols", "field", "policy", "t_row",
                            "seed", "timeout_s", "deadline_factor", "bogus"])
AVAIL = st.fixed_dictionaries({}, optional={
    "kind": st.sampled_from(["schedule", "random", "trace", "weird"]),
    "schedule": VALUES, "p": st.floats(-1, 2, allow_nan=False), "steps": st.integers(-1, 5),
    "path": st.sampled_from(["", "/nonexistent/trace.txt"]), "extra": st.integers()})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(top=st.dictionaries(CEC_KEYS, VALUES, max_size=6), avail=st.none() | AVAIL,
       garbage=st.booleans())
def test_fuzz_run_cec_config(top, avail, garbage):
    lines = [f"{k} = {toml_value(v)}" for k, v in top.items()]
    if avail is not None:
        lines.append("[availability]")
        lines += [f"{k} = {toml_value(v)}" for k, v in avail.items()]
    if garbage:
        lines.append("= = =")
    with tempfile.TemporaryDirectory() as d:
        cfg = Path(d) / "job.toml"
        cfg.write_text("\n".join(lines) + "\n")
        rc, out, err = call(["run", "cec", "--config", str(cfg), "--out",
                             str(Path(d) / "r.jsonl")])
        assert not (Path(d) / "r.jsonl").exists()  # nothing ran: nothing was written
    check(rc, out, err, may_succeed=False)


@settings(max_examples=120, deadline=None)
@given(scheme=st.sampled_from(["uc", "cmr", "sc", "unified", "bdc", "zz"]), K=INTS, q=INTS,
       mu=NUM_TEXT, eta=INTS, n=INTS, N=INTS, T=st.none() | INTS,
       field=st.sampled_from(["auto", "gf2^8", "gf2^16", "float64", "gf2^4"]),
       straggler=st.sampled_from(["none", "shiftexp", "always"]),
       t_row=st.sampled_from(["0", "0.001", "-1", "abc"]),
       fault=st.none() | st.sampled_from(["kill:1:map", "stall:2:encode:1", "slow:1:2",
                                          "kill:0:map", "slow:3", "kill:1:step"]))
def test_fuzz_run_coded_flags(scheme, K, q, mu, eta, n, N, T, field, straggler, t_row, fault):
    argv = ["run", "coded", "--scheme", scheme, "--K", str(K), "--q", str(q), "--mu", mu,
            "--rows-per-batch", str(eta), "--n", str(n), "--N", str(N), "--field", field,
            "--straggler", straggler, "--t-row", t_row, "--out", "/nonexistent/x.jsonl"]
    if T is not None:
        argv += ["--T", str(T)]
    if fault:
        argv += ["--fault", fault]
    rc, out, err = call(argv)
    check(rc, out, err, may_succeed=False)
