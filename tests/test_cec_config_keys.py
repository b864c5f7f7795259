"""The elastic job's newer config keys and pure helpers: stragglers (S), suspects,
estimated speeds, drift, random stragglers, batched decoding.  No MPI."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mpi_coded.cec.config import CECConfig, from_mapping
from mpi_coded.cec.decode import StepDecoder, decode_parts, decode_step
from mpi_coded.cec.plan import make_plan
from mpi_coded.cec.scenario import stragglers_at, true_speeds
from mpi_coded.cec.suspects import Suspects
from mpi_coded.codes.mds import DecoderCache, systematic_mds
from mpi_coded.errors import ConfigError
from mpi_coded.faults import check_steps, parse_fault
from mpi_coded.fields import get_field

BAD = [
    ({"S": 4}, "S: L + S must be <= N=6"),
    ({"S": -1}, "S: stragglers tolerated must be >= 0"),
    ({"S": 1.5}, "S: must be an integer"),
    ({"suspect_after": 0}, "suspect_after: must be >= 1"),
    ({"speeds": "auto", "estimator": "mean"}, "estimator: must be one of ewma, median"),
    ({"speeds": "auto", "estimator_alpha": 0}, "estimator_alpha: must be a number in (0, 1]"),
    ({"speeds": "auto", "estimator_window": 0}, "estimator_window: must be an integer >= 1"),
    ({"speeds": "fast"}, 'speeds: must be a list of numbers or "auto"'),
    ({"speeds": "auto", "true_speeds": [1, 2]}, "true_speeds: must list one speed per machine"),
    ({"speeds": "auto", "true_speeds": [1, 1, 1, 1, 1, 0]}, "speed of machine 6 must be > 0"),
    ({"true_speeds": [1] * 6}, 'true_speeds: is only used with speeds = "auto"'),
    ({"stragglers": 7}, "stragglers: must be in 0..N=6"),
    ({"straggler_factor": 0.5}, "straggler_factor: must be >= 1"),
    ({"workload": "sgd"}, "workload: must be one of independent, power, linreg"),
    ({"workload": "power"}, "workload: power needs a square X"),
    ({"workload": "linreg", "field": "gf2^8"}, 'workload: linreg needs field = "float64"'),
    ({"policy": "uncoded", "S": 1}, 'S: must be 0 with policy = "uncoded"'),
    ({"policy": "best"}, "policy: must be one of heterogeneous, cyclic, heterogeneous-tw, "
     "uncoded"),
]


@pytest.mark.parametrize("mapping,msg", BAD)
def test_bad_new_keys(mapping, msg):
    with pytest.raises(ConfigError) as info:
        from_mapping(mapping)
    assert msg in str(info.value)


def test_good_new_keys_and_defaults_stay_out_of_the_config_line():
    cfg = from_mapping({"S": 2, "suspect_after": 3, "speeds": "auto",
                        "true_speeds": [1, 1, 2, 2, 3, 3], "estimator": "median",
                        "estimator_window": 3, "stragglers": 1, "straggler_factor": 4})
    assert cfg.S == 2 and cfg.speeds.auto and cfg.speeds.true[4] == 3
    assert cfg.to_dict()["estimator"] == "median"
    d = CECConfig().validate().to_dict()
    assert "S" not in d and "speeds_auto" not in d  # same config line as before


def test_drift_specs():
    f = parse_fault("drift:3:4:0.25", "cec", 7)
    assert (f.kind, f.rank, f.step, f.factor) == ("drift", 3, 4, 0.25)
    check_steps([f], 4)
    with pytest.raises(ConfigError, match="drift step must be a step of the job"):
        check_steps([f], 3)
    for spec, msg in [("drift:3:0:2", "drift STEP must be >= 1"),
                      ("drift:3:2:0", "drift FACTOR must be > 0"),
                      ("drift:3:x:2", "STEP must be an integer"),
                      ("drift:3:2", "must look like drift:RANK:STEP:FACTOR")]:
        with pytest.raises(ConfigError, match=msg):
            parse_fault(spec, "cec", 7)


def test_true_speeds_apply_slow_drift_and_stragglers():
    cfg = CECConfig(stragglers=1, straggler_factor=5.0).validate()
    faults = [parse_fault("slow:1:2", "cec", 7), parse_fault("drift:6:3:0.5", "cec", 7)]
    avail = [1, 2, 3, 4, 5, 6]
    s2 = true_speeds(cfg, faults, 2, avail)
    s3 = true_speeds(cfg, faults, 3, avail)
    slow2, slow3 = stragglers_at(cfg, 2, avail), stragglers_at(cfg, 3, avail)
    assert len(slow2) == 1 and stragglers_at(cfg, 2, avail) == slow2  # seeded
    base = {n: s for n, s in cfg.speed_map.items()}
    for n in avail:
        want2 = base[n] / (2 if n == 1 else 1) / (5 if n in slow2 else 1)
        want3 = base[n] / (2 if n == 1 else 1) * (Fraction(1, 2) if n == 6 else 1) / \
            (5 if n in slow3 else 1)
        assert s2[n] == want2 and s3[n] == want3
    # only available machines straggle
    assert set(stragglers_at(cfg, 5, [2, 4, 5])) <= {2, 4, 5}


def test_suspects_missed_machine_sits_out_until_it_answers():
    s = Suspects(after=2)
    s.missed(2, step=2)
    a = s.for_step(3, [1, 2, 3, 4], need=3)
    assert a.planned == (1, 3, 4) and a.left_out == (2,) and not a.rejoined
    assert s.for_step(4, [1, 2, 3, 4], need=3).left_out == (2,)  # no answer yet
    s.heard(2)
    b = s.for_step(5, [1, 2, 3, 4], need=3)
    assert b.planned == (1, 2, 3, 4) and b.rejoined == (2,)


def test_suspects_answer_during_the_missed_step_still_sits_out_one_step():
    s = Suspects(after=2)
    s.missed(5, step=3)
    s.heard(5)
    assert s.for_step(4, [1, 5, 6], need=2).left_out == (5,)
    assert s.for_step(5, [1, 5, 6], need=2).rejoined == (5,)


def test_suspects_are_planned_in_when_too_few_remain():
    s = Suspects(after=1)
    s.missed(2, 1)
    s.missed(3, 1)
    s.heard(3)
    a = s.for_step(2, [1, 2, 3], need=2)
    assert a.forced == (3,) and a.left_out == (2,) and a.planned == (1, 3)


def test_suspects_cut_off_as_slowest_too_often():
    s = Suspects(after=2)
    assert not s.cut(4, 1) and not s.cut(4, 2)
    assert not s.cut(4, 3, delivered=0.9)  # lost a race, delivered most: streak ends
    assert not s.cut(4, 4) and not s.cut(4, 5)
    assert s.cut(4, 6)  # third time in a row
    assert s.for_step(7, [1, 2, 3, 4], need=3).left_out == (4,)
    s.heard(4)
    assert s.for_step(8, [1, 2, 3, 4], need=3).rejoined == (4,)
    s.cut(1, 8)
    s.on_time(1)
    assert s.streak[1] == 0


@pytest.mark.parametrize("field_name", ["float64", "gf2^8"])
def test_decode_into_buffers_and_from_first_L_parts(field_name):
    field = get_field(field_name)
    rng = np.random.default_rng(0)
    N, L, R, cols = 6, 3, 40, 5
    g = systematic_mds(field, N, L)
    x = field.random((L * R, cols), rng)
    w = field.random(cols, rng)
    coded = field.matmul(g, x.reshape(L, R * cols)).reshape(N, R, cols)
    want = field.matmul(x, w).reshape(L, R)
    speeds = {n: Fraction(s) for n, s in zip(range(1, 7), (1, 1, 1.5, 1.5, 2, 2))}
    dec = StepDecoder(DecoderCache(field, g), field, L, R)
    plan = make_plan("heterogeneous", speeds, L, [1, 2, 3, 4, 5, 6], rows=R)
    results = {n: np.concatenate([field.matmul(coded[n - 1][int(a):int(b)], w)
                                  for a, b in plan.machine_ranges(n)]) for n in plan.available}
    yb, _ = decode_step(plan, results, dec)
    assert yb is dec.out and np.array_equal(yb, want) if field.exact else \
        np.allclose(yb, want)
    # S = 1: every set on L + 1 machines; answer sets leaving one machine out of each
    plan1 = make_plan("heterogeneous", speeds, L, [1, 2, 3, 4, 5, 6], rows=R, S=1)
    answers: dict[int, dict[int, np.ndarray]] = {}
    for f, (rs, (a, b)) in enumerate(zip(plan1.sets, plan1.set_ranges)):
        if b > a:
            for n in list(rs.machines)[1:]:  # the first machine is "cut off"
                answers.setdefault(f, {})[n] = field.matmul(coded[n - 1][int(a):int(b)], w)
    yb1, _, used = decode_parts(plan1, answers, dec)
    assert all(len(u) == L for u, rs in zip(used, plan1.sets) if rs.size)
    assert np.array_equal(yb1, want) if field.exact else np.allclose(yb1, want)


def test_batched_decode_groups_sets_with_the_same_machines():
    field = get_field("float64")
    g = systematic_mds(field, 4, 2)
    cache = DecoderCache(field, g)
    dec = StepDecoder(cache, field, 2, 10)
    rng = np.random.default_rng(1)
    z = rng.standard_normal((2, 10))
    dec.gather[:] = g[[0, 3]] @ z
    out, _ = dec.decode([(0, 3, (1, 4)), (3, 6, (1, 4)), (6, 10, (1, 4))])
    assert np.allclose(out, z)
    assert cache.misses == 1  # one inverse (looked up per set), one product for 3 sets


def test_iterative_workloads_resume_only_from_a_saved_state(tmp_path):
    """power carries w: --resume needs the state saved with its steps (OUT.state.npz)."""
    import json

    from mpi_coded.cec.resume import resume_point
    from mpi_coded.results import jsonable

    cfg = from_mapping({"workload": "power", "rows": 30, "cols": 30})
    out = tmp_path / "r.jsonl"
    line = {"kind": "config", "job": "cec", **jsonable(cfg.to_dict())}
    out.write_text(json.dumps(line) + "\n" + json.dumps({"kind": "step", "job": "cec",
                                                        "step": 2}) + "\n")
    with pytest.raises(ConfigError, match="--resume: .*power.* holds no saved state"):
        resume_point(cfg, str(out))


@pytest.mark.parametrize("toml,fault,msg", [
    ("S = 4\n", None, "S: L + S must be <= N=6"),
    ('speeds = "auto"\nestimator = "mean"\n', None, "estimator: must be one of ewma, median"),
    ("", "drift:2:9:0.5", "--fault: drift step must be a step of the job (1..4)"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, toml, fault, msg):
    from conftest import run_cli

    cfg = tmp_path / "job.toml"
    cfg.write_text(toml)
    args = ["run", "cec", "--config", str(cfg), "--out", str(tmp_path / "r.jsonl")]
    if fault:
        args += ["--fault", fault]
    r = run_cli(args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpi-coded: error: ") and msg in lines[0]
    assert not (tmp_path / "r.jsonl").exists()  # nothing ran


@pytest.mark.parametrize("field_name", ["float64", "gf2^16"])
def test_range_product_multiplies_in_place_without_copying_the_rows(field_name):
    import tracemalloc

    from mpi_coded.cec.compute import range_product

    field = get_field(field_name)
    rng = np.random.default_rng(2)
    block = field.random((600, 400), rng)
    w = field.random(400, rng)
    out = field.zeros(600)
    range_product(field, block, 100, 500, w, out)  # warm up (kernels, BLAS buffers)
    tracemalloc.start()
    got = range_product(field, block, 110, 510, w, out[5:], base=10)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert np.shares_memory(got, out) and got.shape == (400,)
    want = field.matmul(block[100:500], w)
    assert np.array_equal(got, want) if field.exact else np.allclose(got, want)
    rows_bytes = 400 * 400 * block.itemsize
    assert peak < rows_bytes / 10  # the 400 rows were never gathered into a copy


# --- the config's shape: alternatives as types, keys declared once -----------------------

def _load(tmp_path, text):
    from mpi_coded.cec.config import load_config

    f = tmp_path / "job.toml"
    f.write_text(text)
    return load_config(str(f))


def test_each_alternative_is_parsed_from_toml(tmp_path):
    from mpi_coded.cec.config import Estimated, Fixed, Random, Schedule, Trace

    cfg = _load(tmp_path, "N = 3\nL = 2\nspeeds = [1, 2.5, 0.5]\n"
                          '[availability]\nkind = "schedule"\nschedule = [[3, 1], [1, 2, 3]]\n')
    assert cfg.speeds == Fixed((Fraction(1), Fraction(5, 2), Fraction(1, 2)))
    assert cfg.availability == Schedule(((3, 1), (1, 2, 3)))
    assert cfg.available_sets() == [(1, 3), (1, 2, 3)]
    assert not cfg.speeds.auto and cfg.speed_map == {1: 1, 2: Fraction(5, 2), 3: Fraction(1, 2)}

    cfg = _load(tmp_path, 'N = 4\nL = 2\nspeeds = "auto"\ntrue_speeds = [1, 1, 2, 2]\n'
                          'estimator = "median"\nestimator_window = 3\n'
                          '[availability]\nkind = "random"\np = 0.25\nsteps = 7\n')
    assert cfg.speeds == Estimated((1, 1, 2, 2), estimator="median", estimator_window=3)
    assert cfg.speeds.auto and cfg.speeds.true == (1, 1, 2, 2)
    est = cfg.speeds.make_estimator([1, 2, 3, 4])
    assert (est.kind, est.window) == ("median", 3)
    assert cfg.availability == Random(p=0.25, steps=7)
    sets = cfg.available_sets()
    assert len(sets) == 7 and all(len(a) >= 2 for a in sets)

    trace = tmp_path / "t.txt"
    trace.write_text("1 2\n# comment\n2,3,4\n")
    cfg = _load(tmp_path, f'N = 4\nL = 2\n[availability]\nkind = "trace"\npath = "{trace}"\n')
    assert cfg.availability == Trace(str(trace), ((1, 2), (2, 3, 4)))
    assert cfg.speeds == Fixed((Fraction(1),) * 4)  # N != 6 without speeds: 1 each
    # the defaults: the seed's example, with every key at its field's default
    cfg = _load(tmp_path, "")
    assert cfg == CECConfig() and cfg.speeds == Fixed() and cfg.availability.schedule[1] == \
        (1, 2, 3, 5, 6)
    assert _load(tmp_path, "N = 5\nL = 2\n").availability == Schedule(((1, 2, 3, 4, 5),))
    assert _load(tmp_path, 'speeds = "auto"\n').speeds.true == (1,) * 6


def test_every_shipped_config_loads_and_its_line_reads_back():
    from pathlib import Path

    from mpi_coded.cec.config import from_record, load_config

    files = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.toml"))
    assert len(files) >= 7
    for f in files:
        cfg = load_config(str(f))
        line = cfg.to_dict()
        back = from_record(line)
        assert back == cfg and back.to_dict() == {**line, "source": "defaults"}, f


OLD_LINES = {
    "seed_example": '{"N": 6, "L": 3, "speeds": ["1", "1", "3/2", "3/2", "2", "2"], "rows": 1260, '
    '"cols": 200, "field": "float64", "policy": "heterogeneous", "t_row": 0.001, "seed": 0, '
    '"data": "", "timeout_s": 120.0, "wait": "auto", "deadline_factor": 2.0, '
    '"deadline_slack_s": 2.0, "availability_kind": "schedule", "schedule": [[1, 2, 3, 4, 5, 6], '
    '[1, 2, 3, 5, 6], [1, 2, 3, 5], [2, 3, 5]], "p": 0.0, "steps": 4, "trace_path": "", '
    '"source": "configs/seed_example.toml"}',
    "auto_speeds": '{"N": 8, "L": 3, "speeds": ["1", "1", "3/2", "3/2", "2", "2", "3", "1"], '
    '"rows": 1200, "cols": 200, "field": "float64", "policy": "heterogeneous", "t_row": 0.0005, '
    '"seed": 0, "data": "", "timeout_s": 120.0, "wait": "auto", "deadline_factor": 2.0, '
    '"deadline_slack_s": 2.0, "availability_kind": "random", "schedule": [[1, 2, 3, 4, 5, 6], '
    '[1, 2, 3, 5, 6], [1, 2, 3, 5], [2, 3, 5]], "p": 0.25, "steps": 20, "trace_path": "", '
    '"speeds_auto": true, "source": "configs/auto_speeds.toml"}',
}
"""Config lines the flat config (before it had types) wrote for two shipped configs."""


@pytest.mark.parametrize("name", list(OLD_LINES))
def test_the_config_line_is_the_one_older_results_have(name):
    import json

    from mpi_coded.cec.config import load_config

    assert load_config(f"configs/{name}.toml").to_dict() == json.loads(OLD_LINES[name])


def test_config_line_keys_of_the_alternatives():
    auto = from_mapping({"speeds": "auto", "estimator_alpha": 0.25}).to_dict()
    assert auto["speeds_auto"] is True and auto["speeds"] == ["1"] * 6
    assert auto["estimator_alpha"] == 0.25 and "estimator" not in auto
    rnd = from_mapping({"availability": {"kind": "random", "p": 0.5}}).to_dict()
    assert (rnd["availability_kind"], rnd["p"], rnd["steps"], rnd["trace_path"]) == \
        ("random", 0.5, 4, "")
    assert "speeds_auto" not in from_mapping({}).to_dict()


def test_resume_reads_an_older_results_file(tmp_path):
    """--resume matches a config line written before the config had types, and continues
    after the last step line (the step lines of the golden seed run)."""
    import json
    from pathlib import Path

    from mpi_coded.cec.config import load_config
    from mpi_coded.cec.resume import resume_point

    golden = json.loads((Path(__file__).parent / "golden" / "mpi_runs.json").read_text())
    steps = [r for r in golden["cec_seed_example"]["records"] if r.get("kind") == "step"]
    config = {"kind": "config", "job": "cec", **json.loads(OLD_LINES["seed_example"]),
              "host": "old-host", "first_step": 1}
    out = tmp_path / "old.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in [config, *steps[:2]]))
    cfg = load_config("configs/seed_example.toml")
    assert resume_point(cfg, str(out)) == 3
    with pytest.raises(ConfigError, match="holds no run of this job's config"):
        resume_point(cfg.with_overrides(seed=5), str(out))


def test_unknown_key_messages_list_the_declared_keys():
    from mpi_coded.cec.config import availability_keys, top_keys

    with pytest.raises(ConfigError) as info:
        from_mapping({"colour": 1})
    known = str(info.value).split("known keys: ")[1].split(", ")
    assert known == list(top_keys())
    assert {"N", "speeds", "true_speeds", "estimator_window", "availability", "workload",
            "job"} <= set(known) and "source" not in known and "p" not in known
    with pytest.raises(ConfigError) as info:
        from_mapping({"availability": {"q": 1}})
    assert str(info.value).endswith("known keys: kind, schedule, p, steps, path")
    assert availability_keys() == ("kind", "schedule", "p", "steps", "path")


WRONG_TYPE = [
    ("N", "N: must be an integer"),
    ("rows", "rows: must be an integer"),
    ("t_row", "t_row: must be a number"),
    ("straggler_factor", "straggler_factor: must be a number"),
    ("field", "field: must be a string"),
    ("data", "data: must be a string"),
    ("speeds", 'speeds: must be a list of numbers or "auto"'),
    ("availability.schedule", "availability.schedule: must be a list of lists of machine ids"),
    ("availability.p", "availability.p: must be a number"),
    ("availability.steps", "availability.steps: must be an integer"),
    ("availability.path", "availability.path: must be a string"),
]


def _with(name, value, kind=None):
    if name.startswith("availability."):
        sub = name.split(".", 1)[1]
        kind = kind or {"p": "random", "steps": "random", "path": "trace"}.get(sub, "schedule")
        return {"availability": {"kind": kind, sub: value}}
    return {name: value, **({"speeds": "auto"} if name in AUTO_KEYS else {})}


AUTO_KEYS = ("true_speeds", "estimator", "estimator_alpha", "estimator_window")


@pytest.mark.parametrize("name,msg", WRONG_TYPE)
def test_wrong_type_messages_come_from_the_field_types(name, msg):
    with pytest.raises(ConfigError) as info:
        from_mapping(_with(name, {"a": 1}))
    assert str(info.value).startswith(msg)


def test_every_declared_key_refuses_a_wrong_type_naming_itself():
    """A new key gets its check and message from its declaration: a TOML table where a
    value belongs fails naming the key, whatever the key."""
    from mpi_coded.cec.config import availability_keys, top_keys

    names = [k for k in top_keys() if k not in ("availability", "job")]
    names += [f"availability.{k}" for k in availability_keys() if k != "kind"]
    for name in names:
        with pytest.raises(ConfigError) as info:
            from_mapping(_with(name, {"a": 1}))
        assert str(info.value).startswith(f"{name}: must be"), (name, str(info.value))


def test_keys_of_an_alternative_not_chosen():
    base = from_mapping({}).to_dict()
    # availability: another kind's keys are ignored (a file can be swept over kinds)
    assert from_mapping({"availability": {"schedule": list(map(list, CECConfig().availability
                                                                .schedule)), "p": 0.5,
                                          "steps": 9, "path": ""}}).to_dict() == \
        {**base, "source": "config"}
    rnd = from_mapping({"availability": {"kind": "random", "schedule": [[1]]}})
    assert rnd.to_dict()["schedule"] == base["schedule"]
    # speeds: true_speeds is refused, the estimator's keys are checked and have no effect
    with pytest.raises(ConfigError, match='true_speeds: is only used with speeds = "auto"'):
        from_mapping({"true_speeds": [1] * 6})
    with pytest.raises(ConfigError, match="estimator: must be one of ewma, median"):
        from_mapping({"estimator": "mean"})
    assert from_mapping({"estimator": "median"}).speeds == CECConfig().speeds


def test_the_docs_key_table_is_the_declared_one():
    from pathlib import Path

    from mpi_coded.cec.config import key_table

    docs = (Path(__file__).resolve().parents[1] / "docs" / "elastic.md").read_text()
    assert key_table() in docs, "docs/elastic.md: paste mpi_coded.cec.config.key_table()"


def test_config_functions_stay_short():
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "mpi_coded" / "cec"
    for name in ("config.py", "config_fields.py", "config_types.py"):
        tree = ast.parse((root / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                assert n <= 60, f"{name}: {node.name} has {n} lines"
