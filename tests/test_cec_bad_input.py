"""Bad input: one line naming the field and the rule, exit 2, no traceback."""

from __future__ import annotations

import pytest

from conftest import run_cli, run_mpi
from mpi_coded.cec.config import from_mapping, load_config
from mpi_coded.cli import main
from mpi_coded.errors import ConfigError

BAD_MAPPINGS = [
    ({"L": 7}, "L: must be <= N=6"),
    ({"availability": {"schedule": [[1, 2]]}}, "at least L=3 machines must be available"),
    ({"availability": {"schedule": [[1, 2, 9]]}}, "unknown machine id"),
    ({"speeds": [1, 1, 0, 1, 1, 1]}, "speeds: speed of machine 3 must be > 0"),
    ({"speeds": [1, 1, -2, 1, 1, 1]}, "speeds: speed of machine 3 must be > 0"),
    ({"rows": 2}, "rows: X needs at least L=3 rows"),
    ({"availability": {"kind": "random", "p": 1.0}}, "availability.p: must be in [0, 1)"),
    ({"availability": {"kind": "random", "p": -0.1}}, "availability.p: must be in [0, 1)"),
    ({"colour": "red"}, "config key 'colour': unknown key"),
    ({"availability": {"kind": "random", "q": 1}}, "config key 'availability.q': unknown key"),
    ({"N": "six"}, "N: must be an integer"),
    ({"field": "gf2^7"}, "field: must be one of"),
    ({"policy": "fastest"}, "policy: must be one of"),
    ({"t_row": -1}, "t_row: must be >= 0"),
    ({"speeds": [1, 2]}, "speeds: must list one speed per machine"),
    ({"availability": 3}, "availability: must be a table"),
    ({"availability": {"kind": 3}}, "availability.kind: must be a string"),
    ({"availability": {"kind": "weird"}},
     "availability.kind: must be one of schedule, random, trace"),
    ({"availability": {"kind": "schedule"}},
     'availability.schedule: is required with kind = "schedule"'),
    ({"availability": {"kind": "trace"}}, 'availability.path: is required with kind = "trace"'),
    ({"availability": {"kind": "trace", "path": ""}}, "availability.path: must name a trace file"),
    ({"availability": {"kind": "trace", "path": "/nonexistent/t.txt"}},
     "availability.path: must be an existing trace file"),
    ({"availability": {"schedule": [[1, 2, "x"]]}}, "availability.schedule: must be an integer"),
    ({"availability": {"schedule": [1, 2, 3]}},
     "availability.schedule: must be a list of lists of machine ids"),
    ({"availability": {"kind": "random", "steps": 0}}, "availability.steps: must be >= 1"),
    ({"t_row": float("nan")}, "t_row: must be finite"),
    ({"job": "coded"}, "job: this is the 'cec' job's config"),
]


@pytest.mark.parametrize("mapping,msg", BAD_MAPPINGS)
def test_config_rules(mapping, msg):
    with pytest.raises(ConfigError) as info:
        from_mapping(mapping)
    assert msg in str(info.value)


def test_good_config_file_and_trace(tmp_path):
    trace = tmp_path / "trace.txt"
    trace.write_text("# step per line\n1,2,3\n\n2 3 4\n")
    cfg_file = tmp_path / "job.toml"
    cfg_file.write_text(f'N = 4\nL = 2\nspeeds = [1, 2, 0.5, 1]\nrows = 10\ncols = 3\n'
                        f'[availability]\nkind = "trace"\npath = "{trace}"\n')
    cfg = load_config(str(cfg_file))
    assert cfg.available_sets() == [(1, 2, 3), (2, 3, 4)]
    assert cfg.rows_per_block == 5


def test_data_file_rules(tmp_path):
    import numpy as np

    np.save(tmp_path / "x.npy", np.zeros((5, 4)))
    np.save(tmp_path / "v.npy", np.zeros(5))
    with pytest.raises(ConfigError, match="data: X must have rows x cols = 9 x 4"):
        from_mapping({"data": str(tmp_path / "x.npy"), "rows": 9})
    with pytest.raises(ConfigError, match="data: must hold a 2-D matrix"):
        from_mapping({"data": str(tmp_path / "v.npy")})
    with pytest.raises(ConfigError, match="needs an integer matrix"):
        from_mapping({"data": str(tmp_path / "x.npy"), "field": "gf2^8"})
    with pytest.raises(ConfigError, match="data: must be an existing .npy file"):
        from_mapping({"data": str(tmp_path / "nope.npy")})
    assert from_mapping({"data": str(tmp_path / "x.npy")}).rows == 5


def test_malformed_toml(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("N = = 3\n")
    assert main(["run", "cec", "--config", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--config: malformed TOML" in err[0]


@pytest.mark.parametrize("args,msg", [
    (["plan", "cec", "--speeds", "1,1,1.5", "--L", "4"], "--L: must be <= the number of machines"),
    (["plan", "cec", "--speeds", "1,1,1.5", "--L", "2", "--available", "1"],
     "available: at least L=2 machines must be available"),
    (["plan", "cec", "--speeds", "1,1,1.5", "--L", "2", "--available", "1,7"],
     "available: unknown machine id 7"),
    (["plan", "cec", "--speeds", "1,0,1.5", "--L", "2"],
     "--speeds: speed of machine 2 must be > 0"),
    (["plan", "cec", "--speeds", "1,x", "--L", "2"], "--speeds: must be comma-separated numbers"),
    (["plan", "cec", "--speeds", "1,1", "--L", "2", "--rows", "0"], "--rows: rows per block"),
    (["plan", "cec", "--speeds", "1,1", "--L", "two"], "argument --L: invalid int value"),
    (["plan", "cec", "--speeds", "1,1", "--L", "1", "--policy", "x"], "argument --policy"),
])
def test_plan_cli_bad_input(args, msg, capsys):
    with pytest.raises(SystemExit) if "argument" in msg else _nullcontext() as ctx:
        rc = main(args)
    if ctx is not None and hasattr(ctx, "value"):
        rc = ctx.value.code
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert msg in err[0]


class _nullcontext:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def test_bad_input_in_a_fresh_process_has_no_traceback(tmp_path):
    cfg = tmp_path / "job.toml"
    cfg.write_text("L = 9\n")
    r = run_cli(["run", "cec", "--config", str(cfg)])
    assert r.returncode == 2
    assert r.stderr.strip() == "mpi-coded: error: L: must be <= N=6 (got 9)"
    assert "Traceback" not in r.stderr


def test_bad_config_under_mpiexec_fails_on_every_rank_before_traffic(tmp_path):
    cfg = tmp_path / "job.toml"
    cfg.write_text("speeds = [1, 1, 1.5, 1.5, 2, 0]\n")
    r = run_mpi(7, ["run", "cec", "--config", str(cfg), "--out", str(tmp_path / "r.jsonl")],
                timeout=60)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert lines == ["mpi-coded: error: speeds: speed of machine 6 must be > 0 (got 0)"]
    assert not (tmp_path / "r.jsonl").exists()


def test_world_size_mismatch(tmp_path):
    r = run_mpi(5, ["run", "cec", "--out", str(tmp_path / "r.jsonl")], timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "mpi-coded: error: mpiexec -n: must be N+1 = 7 (a master and N=6 machines) (got 5)"]
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "r.jsonl").exists()
