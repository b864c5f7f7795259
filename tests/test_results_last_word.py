"""The watcher that writes the summary of a job whose rank 0 was killed before it could
(mpi_coded/results/last_word.py): the pipe protocol, and a real process SIGKILLed."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from mpi_coded.results import SCHEMA_VERSION, last_word, read_results
from mpi_coded.results.last_word import watch

CONFIG = {"kind": "config", "job": "cec", "N": 6}
STEP = {"kind": "step", "job": "cec", "step": 2, "verified": True}
PROVISIONAL = {"kind": "summary", "job": "cec", "steps": 2, "first_step": 1,
               "all_verified": True, "ended_early": "", "lost": []}


def _file(tmp_path: Path, *lines: dict) -> Path:
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return p


def test_without_done_the_last_provisional_summary_is_appended_unverified(tmp_path):
    p = _file(tmp_path, CONFIG, STEP)
    first = dict(PROVISIONAL, steps=1)
    pipe = io.StringIO(json.dumps(first) + "\n" + json.dumps(PROVISIONAL) + "\n")
    assert watch(str(p), 4242, "node1", pipe)
    last = read_results(p)[-1]
    assert last["kind"] == "summary" and last["steps"] == 2
    assert last["all_verified"] is False
    assert last["ended_early"].startswith("rank 0 (node1, pid 4242) ended at ")
    assert "after step 2 without writing its summary" in last["ended_early"]


def test_a_provisional_summary_may_say_how_far_the_job_got(tmp_path):
    """The coded job's summary has no steps: rank 0 says ``after repetition R`` itself, and
    only the summary is written."""
    coded = {"kind": "summary", "job": "coded", "reps": 5, "all_verified": True,
             "abandoned": [1]}
    p = _file(tmp_path, {"kind": "config", "job": "coded"})
    pipe = io.StringIO("".join(json.dumps({"provisional_summary": coded, "after": a}) + "\n"
                               for a in ("before its first repetition",
                                         "after repetition 0", "after repetition 1")))
    assert watch(str(p), 7, "h", pipe)
    last = read_results(p)[-1]
    assert {k: last[k] for k in coded} == dict(coded, all_verified=False)
    assert "after repetition 1 without writing its summary" in last["ended_early"]
    assert set(last) == {*coded, "ended_early"}


def test_done_or_a_summary_already_written_adds_nothing(tmp_path):
    p = _file(tmp_path, CONFIG, STEP)
    before = p.read_text()
    assert not watch(str(p), 1, "h", io.StringIO(json.dumps(PROVISIONAL) + "\ndone\n"))
    assert p.read_text() == before
    # rank 0 wrote its summary and was killed before it said done
    q = _file(tmp_path, CONFIG, STEP, dict(PROVISIONAL, ended_early=None))
    before = q.read_text()
    assert not watch(str(q), 1, "h", io.StringIO(json.dumps(PROVISIONAL) + "\n"))
    assert q.read_text() == before
    # killed before its first provisional summary: nothing to say
    assert not watch(str(p), 1, "h", io.StringIO(""))


def test_a_torn_last_line_is_not_taken_for_a_summary(tmp_path):
    p = _file(tmp_path, CONFIG, STEP)
    with p.open("a") as fh:
        fh.write('{"kind": "summary", "job": "ce')  # killed mid-write
    assert watch(str(p), 1, "h", io.StringIO(json.dumps(PROVISIONAL) + "\n"))
    assert [x["kind"] for x in read_results(p)] == ["config", "step", "summary"]
    assert read_results(p)[-1]["ended_early"]


def test_a_line_cut_in_the_pipe_is_not_taken_for_the_summary(tmp_path):
    p = _file(tmp_path, CONFIG, STEP)
    pipe = io.StringIO(json.dumps(PROVISIONAL) + '\n{"kind": "summary", "steps": 3, "fi')
    assert watch(str(p), 1, "h", pipe)
    last = read_results(p)[-1]
    assert last["steps"] == 2 and last["ended_early"]


def test_lines_longer_than_a_chunk_torn_or_whole(tmp_path):
    """The file's tail is read backwards in 64 KiB chunks: a complete line of 200 KiB, and
    a torn one of 100 KiB after it (no newline in the last chunk), come out right."""
    big = dict(STEP, note="x" * 200_000)
    p = _file(tmp_path, CONFIG, big)
    with p.open("a") as fh:
        fh.write('{"kind": "step", "note": "' + "y" * 100_000)  # killed mid-write
    assert watch(str(p), 1, "h", io.StringIO(json.dumps(PROVISIONAL) + "\n"))
    lines = read_results(p)
    assert [x["kind"] for x in lines] == ["config", "step", "summary"]
    assert lines[1]["note"] == big["note"]
    # a summary longer than a chunk already there: recognised, nothing appended
    q = _file(tmp_path, CONFIG, dict(PROVISIONAL, note="z" * 200_000))
    before = q.read_text()
    assert not watch(str(q), 1, "h", io.StringIO(json.dumps(PROVISIONAL) + "\n"))
    assert q.read_text() == before
    # a file of one torn line: it is dropped, the summary is the file
    r = tmp_path / "torn.jsonl"
    r.write_text('{"kind": "config", "jo')
    assert watch(str(r), 1, "h", io.StringIO(json.dumps(PROVISIONAL) + "\n"))
    assert [x["kind"] for x in read_results(r)] == ["summary"]


def _rank0(tmp_path: Path, end: str) -> tuple[Path, subprocess.Popen]:
    """A process that acts as rank 0 (results file, watcher, provisional summaries per
    step) and then ends with ``end``."""
    out = tmp_path / "job.jsonl"
    summary = {**PROVISIONAL}
    script = textwrap.dedent(f"""
        import json, os, signal, sys
        from mpi_coded.results import LastWord, ResultsWriter
        w = ResultsWriter({str(out)!r})
        w.write({CONFIG!r})
        last = LastWord({str(out)!r})
        for step in (1, 2, 3):
            w.write(dict({STEP!r}, step=step))
            last.provisional(dict({summary!r}, steps=step))
        {end}
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    return out, proc


def _wait_for(pred, timeout: float = 30.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def _watchers(out: Path) -> list[int]:
    """The live watcher processes of results file ``out``."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"mpi_coded.results.last_word" in cmd and str(out).encode() in cmd:
                pids.append(int(d.name))
    return pids


def test_rank0_killed_gets_its_summary_from_the_watcher(tmp_path):
    out, proc = _rank0(tmp_path, "os.kill(os.getpid(), signal.SIGKILL)")
    assert proc.wait(timeout=60) == -9
    assert _wait_for(lambda: read_results(out)[-1]["kind"] == "summary"), out.read_text()
    lines = read_results(out)
    assert [x["kind"] for x in lines] == ["config", "step", "step", "step", "summary"]
    s = lines[-1]
    assert s["steps"] == 3 and s["all_verified"] is False
    assert f"pid {proc.pid}) ended at " in s["ended_early"]
    assert "after step 3" in s["ended_early"]
    assert _wait_for(lambda: _watchers(out) == [])  # and the watcher is gone


def test_rank0_that_said_done_gets_no_line_even_if_killed_after(tmp_path):
    out, proc = _rank0(tmp_path, "last.done(); os.kill(os.getpid(), signal.SIGKILL)")
    assert proc.wait(timeout=60) == -9
    assert _wait_for(lambda: _watchers(out) == [])
    assert [x["kind"] for x in read_results(out)] == ["config", "step", "step", "step"]


_HOLDER = textwrap.dedent("""
    import json, sys
    from mpi_coded.results.writer import try_lock
    with open(sys.argv[1], "ab") as f:  # a watcher's write: locked
        print("held" if try_lock(f.fileno(), 5.0) else "not held", flush=True)
        sys.stdin.readline()
        f.write((json.dumps({"kind": "summary", "job": "cec", "by": "watcher"}) +
                 "\\n").encode())
""")


def test_a_writer_waits_for_an_earlier_jobs_watcher_to_let_go(tmp_path):
    """``--resume`` into the file of a job killed a moment ago: its watcher's summary comes
    before the new job's first line, never among them."""
    import threading

    from mpi_coded.results import ResultsWriter

    p = _file(tmp_path, CONFIG, STEP)
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(p)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        go = threading.Timer(0.3, lambda: (holder.stdin.write("go\n"), holder.stdin.flush()))
        go.start()
        w = ResultsWriter(str(p))  # waits until the holder appended and let go
        w.write({"kind": "config", "job": "cec", "by": "resumed"})
        w.close()
        go.join()
    finally:
        holder.wait(timeout=30)
    assert [x.get("by") for x in read_results(p)] == [None, None, "watcher", "resumed"]


def test_a_watcher_that_does_not_let_go_is_one_warning(tmp_path, monkeypatch, capsys):
    from mpi_coded.results import ResultsWriter, writer

    p = _file(tmp_path, CONFIG)
    fd = os.open(p, os.O_WRONLY | os.O_APPEND)
    other = os.open(p, os.O_WRONLY | os.O_APPEND)
    assert writer.try_lock(fd, 1.0) and not writer.try_lock(other, 0.05)
    monkeypatch.setattr(writer, "WATCHER_WAIT_S", 0.1)
    try:
        ResultsWriter(str(p)).write(STEP)
    finally:
        os.close(fd)
        os.close(other)
    assert "the watcher of an earlier job still holds" in capsys.readouterr().err
    assert read_results(p)[-1] == {**STEP, "schema": SCHEMA_VERSION}
    assert writer.wait_unheld(str(p), 0.0) and writer.wait_unheld(str(tmp_path / "none"))


def test_a_file_system_that_cannot_lock_and_a_fifo_stop_no_writer(tmp_path, monkeypatch):
    """``flock`` failing (ENOSYS: Lustre without -o flock) is no lock, not an error; a named
    pipe as the results file is not waited on (opening it would block)."""
    import errno

    from mpi_coded.results import ResultsWriter, writer

    def no_flock(fd: int, op: int) -> None:
        raise OSError(errno.ENOSYS, "Function not implemented")

    p = _file(tmp_path, CONFIG)
    monkeypatch.setattr(writer.fcntl, "flock", no_flock)
    fd = os.open(p, os.O_RDWR)
    try:
        assert writer.wait_unheld(str(p), 5.0) and not writer.try_lock(fd, 0.0)
    finally:
        os.close(fd)
    w = ResultsWriter(str(p))
    w.write(STEP)
    w.close()
    assert read_results(p)[-1] == {**STEP, "schema": SCHEMA_VERSION}
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert writer.wait_unheld(str(fifo), 5.0)


def test_rank0_does_not_wait_for_its_watcher_to_start(tmp_path, monkeypatch, capsys):
    """The watcher's start (a Python, its imports: a second and more on a loaded host) is
    not rank 0's: it once held the first step of every relaunch (issue 45).  A watcher
    that could not start is still one warning line, read as rank 0 goes on."""
    monkeypatch.setattr(last_word, "_START",
                        "import sys, time; time.sleep(1.5); sys.exit('no package here')")
    out = tmp_path / "job.jsonl"
    t0 = time.monotonic()
    last = last_word.LastWord(str(out))
    last.provisional(dict(PROVISIONAL, steps=1))  # into the pipe: nobody reads it yet
    assert time.monotonic() - t0 < 1.0
    last.done()
    err = capsys.readouterr().err
    assert "no watcher for the last line" in err and "no package here" in err, err
    assert not out.exists()
