"""Plugins (mpi_coded/plugins.py): found by --plugin, MPI_CODED_PLUGINS and entry points;
their schemes, policies and workloads held to the rules of their kind before anything runs;
one line naming the plugin and the rule, exit 2."""

from __future__ import annotations

import dataclasses
import sys
import textwrap
from fractions import Fraction

import pytest

from conftest import ROOT, run_cmd
from mpi_coded import plugins
from mpi_coded.cec.plan import POLICIES, make_plan
from mpi_coded.cec.policies import filled_sets
from mpi_coded.cec.policy import Assignment, ElasticPolicy, check_plan, plan_violation
from mpi_coded.cec.step_plan import StepPlan
from mpi_coded.cec.workloads import WORKLOADS, Workload
from mpi_coded.errors import ConfigError

FLOOR = str(ROOT / "examples" / "proportional_floor.py")
SPEEDS = plugins.WORKED_SPEEDS


class ShortPolicy(ElasticPolicy):
    """Breaks the rule: every row on L - 1 = 2 machines."""

    def assign(self, speeds, lp, available, rows, prev):
        total = rows or 1
        return Assignment({n: (total if n in available[: lp - 1] else 0) for n in available},
                          total, filled_sets({n: 1 if n in available[: lp - 1] else 0
                                              for n in available}, lp - 1, 1, rows))


def mpi_coded(*args: str, env: dict[str, str] | None = None):
    return run_cmd([sys.executable, "-m", "mpi_coded", *args], timeout=120, env=env)


def write_plugin(tmp_path, body: str, name: str = "plug.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def test_the_plan_rule_holds_for_every_package_policy():
    for name, policy in POLICIES.items():
        if not policy.plans_row_sets:
            continue
        for rows in (None, 420):
            plan = make_plan(name, SPEEDS, 3, [1, 2, 3, 5, 6], rows=rows, S=1)
            assert plan_violation(plan) is None, name


def test_the_plan_rule_finds_each_violation():
    good = make_plan("heterogeneous", SPEEDS, 3, [1, 2, 3, 5, 6], rows=420)
    rs = list(good.sets)
    short = StepPlan(**{**good.__dict__, "sets": (rs[0].__class__(rs[0].size,
                                                                  rs[0].machines[:2]),
                                                  *rs[1:])})
    assert "cover every row L + S = 3 times" in plan_violation(short)
    missing = StepPlan(**{**good.__dict__, "sets": tuple(rs[1:])})
    assert "cover the whole block" in plan_violation(missing)
    slow = StepPlan(**{**good.__dict__, "time": good.time * 2})
    assert "max load / speed" in plan_violation(slow)
    with pytest.raises(ConfigError, match="heterogeneous: .*cover the whole block"):
        check_plan(missing)


def test_a_policy_plugin_is_checked_on_the_worked_example():
    with pytest.raises(ConfigError) as exc:
        plugins.PluginRegistry("bad.py").policy(ShortPolicy("short", "two copies"))
    assert str(exc.value).startswith("--plugin: bad.py: policy 'short': a plan must cover "
                                     "every row L + S = 3 times")
    assert "short" not in POLICIES
    with pytest.raises(ConfigError, match="takes a mpi_coded ElasticPolicy"):
        plugins.PluginRegistry("bad.py").policy(object())  # type: ignore[arg-type]


def test_a_workload_plugin_is_checked():
    with pytest.raises(ConfigError, match="products must be 1 .* or 2"):
        plugins.PluginRegistry("w.py").workload(Workload("three", "x", products=3))
    with pytest.raises(ConfigError, match="called 'power' is registered already "
                                          r"\(from mpi_coded\)"):
        plugins.PluginRegistry("w.py").workload(Workload("power", "again"))


def test_a_scheme_plugin_needs_exact_fraction_loads():
    from mpi_coded.coded.schemes import get
    from mpi_coded.coded.schemes.base import Scheme
    from mpi_coded.coded.schemes.load_rules import UnifiedLoadRule

    class FloatLoad(UnifiedLoadRule):
        def load(self, reference):
            return dataclasses.replace(reference, unicast=float(reference.unicast))

    base = get("unified")
    bad = Scheme("floaty", "loads in floats", base.layout, base.code, FloatLoad(), base.delay)
    with pytest.raises(ConfigError, match="'floaty': its loads must be exact fractions"):
        plugins.PluginRegistry("s.py").scheme(bad)


def test_split_plugin_args_takes_the_leading_global_options_only():
    assert plugins.split_plugin_args(["--plugin", "a.py", "--plugin=b", "run", "cec"]) == \
        (["a.py", "b"], ["run", "cec"])
    # after the subcommand, a --plugin is an argument (here of the command cluster runs)
    cmd = ["cluster", "run", "--", "mpiexec", "-n", "3", "mpi-coded", "--plugin", "x.py",
           "run", "cec"]
    assert plugins.split_plugin_args(cmd) == ([], cmd)
    with pytest.raises(ConfigError, match="--plugin: needs a path"):
        plugins.split_plugin_args(["--plugin"])


def test_a_policy_without_row_sets_must_bring_its_runtime_phases():
    class NoSets(ElasticPolicy):
        def assign(self, speeds, lp, available, rows, prev):
            raise AssertionError("not planned")

    with pytest.raises(ConfigError, match="plans no row sets .* must bring its own runtime"):
        plugins.PluginRegistry("p.py").policy(NoSets("nosets", "x", plans_row_sets=False))
    assert "nosets" not in POLICIES


def test_a_policy_whose_plan_raises_is_named_with_the_error():
    class Broken(ElasticPolicy):
        def assign(self, speeds, lp, available, rows, prev):
            raise ZeroDivisionError("oops")

    with pytest.raises(ConfigError, match=r"--plugin: b.py: policy 'broken' cannot plan the "
                                          r"worked example .*ZeroDivisionError: oops"):
        plugins.PluginRegistry("b.py").policy(Broken("broken", "x"))


def test_steps_may_be_a_class_and_a_bad_one_is_refused():
    from mpi_coded.runtime.cec.coded_steps import CodedSteps
    from mpi_coded.runtime.cec.steps import steps_for

    pol = POLICIES.lookup("heterogeneous", "policy")
    assert steps_for(ElasticPolicy("c", "x", steps=CodedSteps)) is CodedSteps
    assert steps_for(pol) is CodedSteps
    with pytest.raises(ConfigError, match="must name a subclass"):
        steps_for(ElasticPolicy("d", "x", steps=int))
    with pytest.raises(ConfigError, match="cannot be imported .*ModuleNotFoundError"):
        steps_for(ElasticPolicy("e", "x", steps="no_such_module_xyz:Steps"))


def test_plan_with_the_example_policy_from_the_command_line():
    r = mpi_coded("--plugin", FLOOR, "plan", "cec", "--speeds", "1,1,1.5,1.5,2,2", "--L", "3",
                  "--available", "1,2,3,5,6", "--rows", "20", "--policy",
                  "proportional-floor", "--json")
    assert r.returncode == 0, r.stderr
    assert '"policy": "proportional-floor"' in r.stdout and '"time": "2/5"' in r.stdout
    # without the plugin the name is unknown, in the parser's one line
    r = mpi_coded("plan", "cec", "--speeds", "1,2,3", "--L", "2", "--policy",
                  "proportional-floor")
    assert r.returncode == 2 and "invalid choice: 'proportional-floor'" in r.stderr


def test_the_plugin_may_come_from_the_environment():
    r = mpi_coded("plan", "cec", "--speeds", "3,1,1,1", "--L", "2", "--rows", "10",
                  "--policy", "proportional-floor", env={plugins.ENV: FLOOR})
    assert r.returncode == 0, r.stderr
    assert "proportional-floor plan" in r.stdout


def test_the_floor_rounding_costs_against_the_optimal_plan():
    import importlib.util

    spec = importlib.util.spec_from_file_location("floor_example", FLOOR)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sp = {1: Fraction(37, 10), 2: Fraction(3, 10), 3: Fraction(11, 10), 4: Fraction(2)}
    k = mod.floor_rows(sp, 2, 20)
    assert sum(k.values()) == 40 and max(k.values()) <= 20
    # 40 * 3.7 / 7.1 = 20.8 > 20: machine 1 capped at 20, the other 20 re-shared over
    # 0.3, 1.1, 2 (sum 3.4): 1.76, 6.47, 11.76 -> floors 1, 6, 11; the 2 rows the floors
    # leave out go to the fastest below the cap: machine 4, then 3
    assert k == {1: 20, 2: 1, 3: 7, 4: 12}
    assert mod.proportional_shares(sp, 2, Fraction(1))[1] == 1


def test_a_bad_plugin_is_one_line_and_exit_2(tmp_path):
    short = write_plugin(tmp_path, """
        from mpi_coded.cec.policies import filled_sets
        from mpi_coded.cec.policy import Assignment, ElasticPolicy

        class Short(ElasticPolicy):
            def assign(self, speeds, lp, available, rows, prev):
                keep = available[: lp - 1]
                num = {n: (1 if n in keep else 0) for n in available}
                return Assignment(num, 1, filled_sets(num, lp - 1, 1, rows))

        def mpi_coded_register(registry):
            registry.policy(Short("short", "every row twice"))
        """)
    cases = [
        (short, "policy 'short': a plan must cover every row L + S = 3 times"),
        (write_plugin(tmp_path, "x = 1\n", "nohook.py"), "must define mpi_coded_register"),
        (write_plugin(tmp_path, "import no_such_module_here\n", "broken.py"),
         "cannot be imported (ModuleNotFoundError"),
        (tmp_path / "missing.py", "no such plugin file"),
    ]
    for path, rule in cases:
        r = mpi_coded("--plugin", str(path), "plan", "cec", "--speeds", "1,2,3", "--L", "2")
        assert r.returncode == 2, r
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"mpi-coded: error: --plugin: {path}: ")
        assert rule in lines[0], lines[0]


def test_a_module_plugin_and_its_workload(tmp_path):
    write_plugin(tmp_path, """
        from mpi_coded.cec.workloads import Workload

        class Twice(Workload):
            def step(self, it, fresh, product):
                product(0, fresh())
                product(0, fresh())
                return None, None

        def mpi_coded_register(registry):
            registry.workload(Twice("twice", "two fresh products a step"))
        """, "my_plugin_mod.py")
    code = ("import sys; from mpi_coded import plugins; plugins.load_plugin('my_plugin_mod');"
            "from mpi_coded.cec.workloads import WORKLOADS; "
            "print(WORKLOADS.origin('twice'), plugins.load_plugin('my_plugin_mod'))")
    r = run_cmd([sys.executable, "-c", code], timeout=60, env={"PYTHONPATH": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["my_plugin_mod", "None"]  # loaded once


def test_entry_points_are_loaded(tmp_path, monkeypatch):
    write_plugin(tmp_path, """
        from mpi_coded.cec.workloads import Workload

        def mpi_coded_register(registry):
            registry.workload(Workload("ep-fresh", "from an entry point"))
        """, "ep_plugin.py")
    dist = tmp_path / "ep_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[mpi_coded.plugins]\nfresh = ep_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        regs = plugins.load_entry_points()
        assert [r.added for r in regs] == [[("workload", "ep-fresh")]]
        assert WORKLOADS.origin("ep-fresh") == "fresh = ep_plugin (entry point)"
    finally:
        if "ep-fresh" in WORKLOADS:
            WORKLOADS.unregister("ep-fresh")
        plugins._loaded.pop("ep_plugin", None)
