"""``mpi-coded load`` (pure subcommand)."""

from __future__ import annotations

import json

import pytest

from mpi_coded import cli
from mpi_coded.cli.coded import load_result, register_load
from mpi_coded.errors import EXIT_BAD_INPUT, ConfigError


def run(argv):
    """Mimic cli.main with only our subcommand registered."""
    parser = cli.OneLineParser(prog="mpi-coded")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=cli.OneLineParser)
    register_load(sub)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ConfigError as exc:
        print(f"mpi-coded: error: {exc}", file=__import__("sys").stderr)
        return EXIT_BAD_INPUT


def test_json_spec_example(capsys):
    assert run(["load", "--scheme", "unified", "--K", "6", "--q", "4", "--mu", "1/2",
                "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    obj = json.loads(out)
    assert obj == {"scheme": "unified", "K": 6, "q": 4, "mu": "1/2", "s_q": 2, "strategy": 1,
                   "load": 0.35, "load_exact": "7/20"}


@pytest.mark.parametrize("scheme,K,q,mu,exact,s_q,strategy", [
    ("uc", 6, 4, "1/2", "5/6", 2, 1),
    ("cmr", 6, 4, "1/2", "1/3", 2, 1),
    ("sc", 6, 4, "1/2", "3/4", 2, 1),
    ("unified", 9, 6, "1/3", "11/24", 2, 1),
    ("unified", 6, 5, "0.8", "19/150", 4, 2),
])
def test_json_all_schemes(capsys, scheme, K, q, mu, exact, s_q, strategy):
    assert run(["load", "--scheme", scheme, "--K", str(K), "--q", str(q), "--mu", mu,
                "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["load_exact"] == exact and (obj["s_q"], obj["strategy"]) == (s_q, strategy)
    num, _, den = exact.partition("/")
    assert obj["load"] == int(num) / int(den)


def test_readable_line(capsys):
    assert run(["load", "--scheme", "unified", "--K", "6", "--q", "4", "--mu", "1/2"]) == 0
    out = capsys.readouterr().out
    assert out == "unified: K=6 q=4 mu=1/2 s_q=2 strategy=1 load=7/20 (0.350000)\n"


@pytest.mark.parametrize("argv", [
    ["load", "--scheme", "lt", "--K", "6", "--q", "4", "--mu", "1/2"],
    ["load", "--scheme", "unified", "--K", "six", "--q", "4", "--mu", "1/2"],
    ["load", "--scheme", "unified", "--q", "4", "--mu", "1/2"],
])
def test_bad_args_one_line(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        run(argv)
    assert exc.value.code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error:" in err


@pytest.mark.parametrize("mu,q,needle", [("1/3", 4, "mu: mu * q must be an integer"),
                                         ("x", 4, "mu: must be a fraction"),
                                         ("1/2", 7, "q: must satisfy q <= K")])
def test_config_errors(capsys, mu, q, needle):
    code = run(["load", "--scheme", "unified", "--K", "6", "--q", str(q), "--mu", mu])
    assert code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


def test_load_result_direct():
    assert load_result("cmr", 9, 6, "1/3")["load_exact"] == "7/18"


def test_wired_into_cli(capsys):
    try:
        parser = cli.build_parser()
        parser.parse_args(["load", "--scheme", "sc", "--K", "6", "--q", "4", "--mu", "1/2"])
    except (SystemExit, ImportError):
        pytest.skip("`load` is not wired into mpi_coded.cli yet")
    capsys.readouterr()
    assert cli.main(["load", "--scheme", "sc", "--K", "6", "--q", "4", "--mu", "1/2",
                     "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["load_exact"] == "3/4"
    assert cli.main(["load", "--scheme", "sc", "--K", "6", "--q", "4", "--mu", "1/3"]) == 2


def test_load_choices_are_the_registry_when_the_parser_is_built(capsys):
    """A scheme registered before the parser is built (a plugin's) is one of ``load``'s
    choices; nothing froze them at import."""
    from mpi_coded.coded.schemes import REGISTRY, Scheme

    with REGISTRY.registered(Scheme("toy", "a toy scheme")):
        assert run(["load", "--scheme", "toy", "--K", "6", "--q", "4", "--mu", "1/2",
                    "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["scheme"] == "toy"
    with pytest.raises(SystemExit):
        run(["load", "--scheme", "toy", "--K", "6", "--q", "4", "--mu", "1/2"])
    assert "invalid choice: 'toy'" in capsys.readouterr().err


def test_a_reader_that_stops_early_is_no_traceback():
    """``mpi-coded ... | head``: stdout's reader gone before the output is written ends the
    command with status 141 (128 + SIGPIPE) and nothing on stderr, not a BrokenPipeError."""
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)  # the reader is gone before anything is written
    try:
        r = subprocess.run([sys.executable, "-m", "mpi_coded", "load", "--scheme", "unified",
                            "--K", "6", "--q", "4", "--mu", "1/2"], stdout=write,
                           stderr=subprocess.PIPE, text=True, timeout=120,
                           env={k: v for k, v in os.environ.items()  # stdout buffered
                                if k != "PYTHONUNBUFFERED"})
    finally:
        os.close(write)
    from mpi_coded.cli.main import EXIT_BROKEN_PIPE

    assert (r.returncode, r.stderr) == (EXIT_BROKEN_PIPE, "")
