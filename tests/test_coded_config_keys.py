"""The coded job's config keys, declared once (``mpi_coded.coded.job``: ``ParamKeys`` and
``CodedJob``): the flags, the TOML keys, the type and rule messages and the key table of
docs/coded.md all come from the declarations.  No MPI."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pytest

from mpi_coded import cli
from mpi_coded.cli.coded import register_run
from mpi_coded.coded.job import (
    KEY_CLASSES,
    PARAM_KEYS,
    RUN_KEYS,
    CodedJob,
    from_mapping,
    key_table,
    load_job,
    top_keys,
)
from mpi_coded.coded.schemes import REGISTRY, Scheme
from mpi_coded.config_keys import flag_keys, is_required, keys
from mpi_coded.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
BASE = {"scheme": "unified", "K": 6, "q": 4, "mu": "1/2", "rows_per_batch": 4, "n": 16,
        "N": 12}
"""A valid job (docs/coded.md's sizes)."""


def run_parser() -> argparse.ArgumentParser:
    """``run coded``'s parser, built now."""
    parser = cli.OneLineParser(prog="mpi-coded")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=cli.OneLineParser)
    return register_run(sub)


def options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {a.option_strings[0]: a for a in parser._actions if a.option_strings}


def error(mapping: dict) -> str:
    with pytest.raises(ConfigError) as info:
        from_mapping(mapping)
    return str(info.value)


def test_the_docs_key_table_is_the_declared_one():
    docs = (ROOT / "docs" / "coded.md").read_text()
    assert key_table() in docs, "docs/coded.md: paste mpi_coded.coded.job.key_table()"


def test_the_keys_are_the_declared_fields_in_order():
    assert PARAM_KEYS == ("scheme", "K", "q", "mu", "rows_per_batch", "n", "N", "T", "field")
    assert RUN_KEYS == ("straggler", "t_row", "speeds", "chunks", "seed", "reps",
                        "timeout_s", "assignment", "wait", "multicast", "fault_tolerance",
                        "quarantine_reps", "mercurial_strikes")
    assert top_keys() == ("job", *PARAM_KEYS, *RUN_KEYS)
    rows = [line.split("`")[1] for line in key_table().splitlines()[2:]]
    assert rows == [*PARAM_KEYS, *RUN_KEYS, "job"]
    # the record's fields are the declared run keys (CodedJob's one non-key field: params)
    job = from_mapping(BASE)
    assert list(job.to_dict())[:len(PARAM_KEYS) + len(RUN_KEYS)] == [*PARAM_KEYS, *RUN_KEYS]


def test_the_flags_are_the_declared_keys():
    opts = options(run_parser())
    dests = {a.dest: flag for flag, a in opts.items()
             if flag not in ("-h", "--config", "--out", "--fault")}
    assert set(dests) == set(flag_keys(*KEY_CLASSES))
    assert set(flag_keys(*KEY_CLASSES)) == set(top_keys()) - {"job", "speeds"}  # TOML only
    assert dests["timeout_s"] == "--timeout" and dests["rows_per_batch"] == "--rows-per-batch"
    assert dests["t_row"] == "--t-row" and dests["K"] == "--K"
    assert all(opts[flag].default is None for flag in dests.values())  # not given: None
    args = run_parser().parse_args(["--K", "6", "--t-row", "0.5", "--mu", "1/2", "--timeout",
                                    "3"])
    assert (args.K, args.t_row, args.mu, args.timeout_s, args.q) == (6, 0.5, "1/2", 3.0, None)
    help_text = opts["--chunks"].help or ""
    assert help_text.startswith("map chunks") and help_text.endswith(">= 1")


def test_bad_flag_values_are_one_line(capsys):
    argv = ["run", "coded", *(f"--{k}={v}".replace("_", "-") for k, v in BASE.items())]
    for extra, msg in [(["--chunks", "0"], "chunks: must be >= 1 (got 0)"),
                       (["--wait", "spin"], "wait: must be one of auto, polite, busy (got spin)"),
                       (["--timeout", "0"], "timeout_s: must be > 0 seconds (got 0.0)")]:
        assert cli.main([*argv, *extra]) == 2
        assert capsys.readouterr().err == f"mpi-coded: error: {msg}\n"
    with pytest.raises(SystemExit) as exc:
        cli.main([*argv, "--K", "six"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--K" in err


def test_unknown_key_messages_list_the_declared_keys():
    msg = error({**BASE, "colour": 1})
    assert msg.startswith("config key 'colour': unknown key")
    assert msg.split("known keys: ")[1].split(", ") == list(top_keys())
    assert error({**BASE, "job": "cec"}) == "job: this is the 'coded' job's config (got cec)"
    assert from_mapping({**BASE, "job": "coded"}) == from_mapping(BASE)


@pytest.mark.parametrize("name", [k for k in top_keys() if k != "job"])
def test_every_declared_key_refuses_a_wrong_type_naming_itself(name):
    """A new key gets its check and message from its declaration."""
    assert error({**BASE, name: {"a": 1}}).startswith(f"{name}: must be")


WRONG_TYPE = [("K", 6.5, "K: must be an integer"), ("T", True, "T: must be an integer"),
              ("mu", True, "mu: must be a fraction like 1/2"),
              ("t_row", "x", "t_row: must be a number"), ("scheme", 1, "scheme: must be a string"),
              ("speeds", [1, "x"], "speeds: must be a list of numbers"),
              ("speeds", 2, "speeds: must be a list of numbers")]


@pytest.mark.parametrize("name,value,msg", WRONG_TYPE)
def test_wrong_type_messages_come_from_the_declarations(name, value, msg):
    assert error({**BASE, name: value}).startswith(msg)


def test_required_keys_are_those_without_a_default():
    required = [f.name for cls in KEY_CLASSES for f in keys(cls) if is_required(f)]
    assert required == ["scheme", "K", "q", "mu", "rows_per_batch", "n", "N"]
    for name in required:
        rest = {k: v for k, v in BASE.items() if k != name}
        assert error(rest) == f"{name}: is required (flag or config key)"
        assert error({**rest, name: None}) == f"{name}: is required (flag or config key)"


RULES = [
    ({"chunks": 0}, "chunks: must be >= 1 (got 0)"),
    ({"seed": -1}, "seed: must be >= 0 (got -1)"),
    ({"reps": 0}, "reps: must be >= 1 (got 0)"),
    ({"timeout_s": 0}, "timeout_s: must be > 0 seconds (got 0.0)"),
    ({"t_row": -1}, "t_row: must be >= 0 seconds (got -1.0)"),
    ({"t_row": math.nan}, "t_row: must be >= 0 seconds (got nan)"),
    ({"t_row": math.inf}, "t_row: must be >= 0 seconds (got inf)"),
    ({"straggler": "always"}, "straggler: must be one of none, shiftexp (got always)"),
    ({"straggler": "shiftexp"}, "t_row: straggler shiftexp scales t_row: must be > 0"),
    ({"wait": "spin"}, "wait: must be one of auto, polite, busy (got spin)"),
    ({"multicast": "ring"}, "multicast: must be one of p2p, bcast (got ring)"),
    ({"scheme": "zz"}, "scheme: must be one of uc, cmr, sc, unified, bdc, lt (got zz)"),
    ({"speeds": [1, 1]}, "speeds: must list one speed per server (K=6) (got 2)"),
    ({"field": "gf2^4"}, "field: must be one of auto, float64, gf2^8, gf2^16 (got gf2^4)"),
]


@pytest.mark.parametrize("change,msg", RULES)
def test_rule_messages(change, msg):
    assert error({**BASE, **change}).startswith(msg)


def test_good_values_are_converted():
    job = from_mapping({**BASE, "t_row": 1, "timeout_s": math.inf, "speeds": [1, 2, 1, 1, 1, 3],
                        "field": "gf16", "mu": 0.5, "wait": "busy"})
    assert job.t_row == 1.0 and isinstance(job.t_row, float) and job.timeout_s == math.inf
    assert job.speeds == (1.0, 2.0, 1.0, 1.0, 1.0, 3.0)
    assert job.params.field_name == "gf2^16" and str(job.params.mu) == "1/2"
    assert job == CodedJob(params=job.params, t_row=1.0, timeout_s=math.inf,
                           speeds=job.speeds, wait="busy")


def test_scheme_choices_are_the_registry_when_asked():
    """A scheme registered before the parser is built is offered and accepted; nothing
    froze the list at import."""
    with REGISTRY.registered(Scheme("toy", "a toy scheme")):
        assert "toy" in (options(run_parser())["--scheme"].help or "")
        assert "`toy`" in key_table()
        assert error({**BASE, "scheme": "zz"}).startswith(
            "scheme: must be one of uc, cmr, sc, unified, bdc, lt, toy")
        assert from_mapping({**BASE, "scheme": "toy"}).params.scheme == "toy"
    assert "toy" not in (options(run_parser())["--scheme"].help or "")
    assert "toy" not in key_table()


def test_a_toml_config_is_the_same_job_as_the_flags(tmp_path):
    cfg = tmp_path / "coded.toml"
    cfg.write_text('job = "coded"\nscheme = "unified"\nK = 6\nq = 4\nmu = "1/2"\n'
                   "rows_per_batch = 4\nn = 16\nN = 12\nstraggler = \"shiftexp\"\n"
                   "t_row = 0.001\nspeeds = [1, 1, 2, 2, 1, 1]\nreps = 2\n"
                   'multicast = "bcast"\n')
    parser = cli.build_parser()
    flag_args = ["--scheme", "unified", "--K", "6", "--q", "4", "--mu", "1/2",
                 "--rows-per-batch", "4", "--n", "16", "--N", "12", "--straggler", "shiftexp",
                 "--t-row", "0.001", "--reps", "2", "--multicast", "bcast"]

    def job(argv):
        args = parser.parse_args(["run", "coded", *argv])
        return load_job(args.config, {k: getattr(args, k) for k in flag_keys(*KEY_CLASSES)})

    from_file = job(["--config", str(cfg)])
    from_flags = job(flag_args)
    assert from_file == CodedJob(params=from_flags.params, straggler="shiftexp", t_row=0.001,
                                 speeds=(1.0, 1.0, 2.0, 2.0, 1.0, 1.0), reps=2,
                                 multicast="bcast")
    assert from_file.to_dict() == {**from_flags.to_dict(), "speeds": [1.0, 1.0, 2.0, 2.0,
                                                                       1.0, 1.0]}
    over = job(["--config", str(cfg), "--reps", "3", "--q", "6", "--mu", "1/3"])
    assert (over.reps, over.params.q, str(over.params.mu)) == (3, 6, "1/3")  # flags win
    cfg.write_text(cfg.read_text() + "colour = 1\n")
    with pytest.raises(ConfigError, match="config key 'colour': unknown key"):
        job(["--config", str(cfg)])


def test_the_elastic_job_uses_the_same_machinery():
    import mpi_coded.cec.config_fields as old
    import mpi_coded.config_keys as shared

    assert old.key is shared.key and old.table_rows is shared.table_rows
