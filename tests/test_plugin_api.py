"""The public plugin API (mpi_coded/plugin.py): one module a plugin imports, documented
name by name; built-ins registered through the same hook; a scheme's own load checked
in every run; a plugin failing inside a job ends it in one line naming the plugin; a
scheme, a policy, a workload and a fault mode from one file each outside the package,
under mpiexec and in the report."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from fractions import Fraction

import pytest

from conftest import ROOT, run_cli, run_mpi
from mpi_coded import plugin, plugins
from mpi_coded.cec.plan import POLICIES
from mpi_coded.cec.workloads import WORKLOADS
from mpi_coded.coded.schemes import REGISTRY
from mpi_coded.faults import FAULTS, parse_fault
from mpi_coded.results import CONFIG, RUN, STEP, SUMMARY, kind_of, read_results

EXAMPLES = ROOT / "examples"
LOGISTIC, HOG = str(EXAMPLES / "logistic.py"), str(EXAMPLES / "hog.py")
WRONG_LOAD = """
import dataclasses
from fractions import Fraction
from mpi_coded.plugin import Registrar, Scheme, UnifiedLoad, UnifiedLoadRule, registered

class WrongLoad(UnifiedLoadRule):   # uc's layout and code, but it claims 5/12
    closed_form = True
    def load(self, reference: UnifiedLoad) -> UnifiedLoad:
        return dataclasses.replace(reference, unicast=Fraction(5, 12) - reference.multicast)

uc = registered("scheme", "uc")
SCHEME = Scheme("uc-wrong", "uc claiming a wrong load", layout=uc.layout, code=uc.code,
                loads=WrongLoad(), delay=uc.delay)

def mpi_coded_register(registry: Registrar) -> None:
    registry.scheme(SCHEME)
"""
LATE_BROKEN = """
from mpi_coded.plugin import Assignment, ElasticPolicy, Registrar, filled_sets, registered

HET = registered("policy", "heterogeneous")

class LateBroken(ElasticPolicy):
    '''The optimum, except with all speeds equal: then every row on L - 1 machines.'''
    def assign(self, speeds, lp, available, rows, prev):
        if len(set(speeds.values())) > 1:
            return HET.assign(speeds, lp, available, rows, prev)
        num = {n: 1 if i < lp - 1 else 0 for i, n in enumerate(available)}
        return Assignment(num, 1, filled_sets(num, lp - 1, 1, rows))

def mpi_coded_register(registry: Registrar) -> None:
    registry.policy(LateBroken("late-broken", "breaks only inside a job"))
"""


def lines_of(path, kind):
    return [r for r in read_results(path) if kind_of(r) == kind]


# --- the module ---------------------------------------------------------------------------
def test_every_public_name_exists_and_the_reference_page_lists_it():
    page = (ROOT / "docs" / "plugin-api.md").read_text()
    for name in plugin.__all__:
        assert hasattr(plugin, name), name
        assert f"`{name}`" in page, f"docs/plugin-api.md does not describe {name}"
    assert plugin.API_VERSION.count(".") == 1


def test_the_examples_import_nothing_of_the_package_but_the_public_module():
    for path in sorted(EXAMPLES.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            mods = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            bad = [m for m in mods if m.startswith("mpi_coded") and m != "mpi_coded.plugin"]
            assert bad == [], f"{path.name} imports {bad}"
    assert len((EXAMPLES / "replication.py").read_text().splitlines()) < 150


def test_the_examples_are_clean_under_mypy_strict():
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
                        "examples/"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_package_registers_its_own_through_the_hook_and_each_passes_a_plugins_checks():
    for registry, check in ((REGISTRY, plugins.check_scheme), (POLICIES, plugins.check_policy),
                            (WORKLOADS, plugins.check_workload), (FAULTS, plugins.check_fault)):
        assert len(registry) >= 3
        for name, item in registry.items():
            assert registry.origin(name) == "mpi_coded"
            check(item, "mpi_coded")


def test_fault_modes_parse_through_their_objects():
    assert parse_fault("drift:2:3:0.5", "cec", 7).factor == 0.5
    with pytest.raises(plugin.ConfigError, match="kind must be one of kill, stall"):
        parse_fault("melt:1:map", "coded", 7)


def test_a_scheme_whose_declared_load_is_wrong_is_caught_by_the_check():
    ns: dict[str, object] = {}
    exec(compile(WRONG_LOAD, "wrong.py", "exec"), ns)  # noqa: S102 - the plugin's text
    scheme = ns["SCHEME"]
    assert isinstance(scheme, plugin.Scheme)
    uc = plugin.registered("scheme", "uc")
    assert isinstance(uc, plugin.Scheme)
    p = uc.params(6, 3, Fraction(1, 3), 2, 6, 6)
    right = uc.declared_load(p)
    assert uc.load_mismatch(p, right) is None
    why = scheme.load_mismatch(p, right)
    assert why is not None and "'uc-wrong' declares load 5/12" in why


# --- under mpiexec ------------------------------------------------------------------------
@pytest.mark.mpi
def test_a_wrong_load_scheme_is_not_verified_in_the_run_and_on_the_report(tmp_path):
    wrong = tmp_path / "wrong.py"
    wrong.write_text(WRONG_LOAD)
    out = tmp_path / "w.jsonl"
    r = run_mpi(7, ["--plugin", str(wrong), "run", "coded", "--scheme", "uc-wrong", "--K", "6",
                    "--q", "6", "--mu", "1/6", "--rows-per-batch", "2", "--n", "6", "--N", "6",
                    "--reps", "2", "--out", str(out)], timeout=240)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "'uc-wrong' declares load 5/12" in r.stderr
    runs = lines_of(out, RUN)
    assert len(runs) == 2
    for run in runs:
        assert run["verified"] is False and run["max_error"] == 0.0
        assert run["load_analytic_exact"] == "5/12" and "uc-wrong" in run["load_check"]
    assert lines_of(out, SUMMARY)[-1]["all_verified"] is False
    page_dir = tmp_path / "page"
    rep = run_cli(["--plugin", str(wrong), "report", str(out), "--out", str(page_dir),
                   "--quiet"], timeout=180)
    page = (page_dir / "report.html").read_text()
    assert rep.returncode != 0 or "did not verify" in page
    assert "&#x27;uc-wrong&#x27; declares load 5/12" in page or "'uc-wrong' declares" in page


@pytest.mark.mpi
def test_a_policy_that_breaks_inside_a_job_ends_it_in_one_line_naming_the_plugin(tmp_path):
    late = tmp_path / "late.py"
    late.write_text(LATE_BROKEN)
    cfg = tmp_path / "c.toml"
    cfg.write_text(textwrap.dedent("""\
        t_row = 0.0005
        speeds = [1, 1, 1, 1, 1, 1]
        """))
    out = tmp_path / "late.jsonl"
    r = run_mpi(7, ["--plugin", str(late), "run", "cec", "--config", str(cfg), "--policy",
                    "late-broken", "--out", str(out)], timeout=240)
    assert r.returncode != 0
    errs = [ln for ln in r.stderr.splitlines() if "late-broken" in ln]
    assert errs, r.stderr
    assert f"plugin {late}: policy 'late-broken':" in errs[0]
    assert "Traceback" not in r.stderr
    recs = read_results(out)
    assert kind_of(recs[-1]) == SUMMARY and recs[-1]["all_verified"] is False


@pytest.mark.mpi
@pytest.mark.portable
def test_a_plugin_workload_and_fault_mode_run_verified_and_in_the_report(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('t_row = 0.0002\nworkload = "logistic"\nrows = 120\ncols = 30\n'
                   '[availability]\nkind = "random"\np = 0.3\nsteps = 5\n')
    out = tmp_path / "lg.jsonl"
    args = ["--plugin", LOGISTIC, "--plugin", HOG]
    r = run_mpi(7, [*args, "run", "cec", "--config", str(cfg), "--fault",
                    "hog:2:step@2:0.3", "--out", str(out)], timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rank 2 (" in r.stdout + r.stderr and "hogs its core 0.3 s" in r.stdout + r.stderr
    steps = lines_of(out, STEP)
    assert len(steps) == 5 and all(s["verified"] and s["transpose"]["verified"]
                                   for s in steps)
    assert lines_of(out, CONFIG)[0]["workload"] == "logistic"
    losses = [s["residual"] for s in steps]
    assert all(b <= a + 1e-9 for a, b in zip(losses, losses[1:]))  # eta = 1/Lipschitz
    check = read_results(out)[-1]["workload_check"]
    assert check["workload"] == "logistic" and check["ok"], check
    page_dir = tmp_path / "page"
    rep = run_cli([*args, "report", str(out), "--out", str(page_dir), "--quiet"],
                  timeout=180)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    page = (page_dir / "report.html").read_text()
    assert "logistic" in page and "NOT VERIFIED" not in page.upper()


def test_a_plugin_workloads_own_failure_names_it_and_the_runtimes_passes_through():
    import numpy as np

    from mpi_coded.cec.workloads import Iterate
    from mpi_coded.errors import PluginError

    class Boom(plugin.Workload):
        def step(self, it, fresh, product):
            product(0, it.w)
            raise ZeroDivisionError("its own bug")

    with WORKLOADS.registered(Boom("boom", "raises"), origin="boom.py") as boom:
        it = Iterate(boom, np.zeros(2), np.zeros(2), np.zeros(2))
        with pytest.raises(PluginError, match=r"^plugin boom.py: workload 'boom': "
                                              r"ZeroDivisionError: its own bug$"):
            it.step(lambda: None, lambda i, v: v)

        def deadline(i, v):
            raise TimeoutError("the runtime's deadline")

        with pytest.raises(TimeoutError, match="the runtime's deadline"):
            it.step(lambda: None, deadline)  # not the plugin's fault: passes through


def test_a_plugin_fault_modes_failure_names_it():
    from mpi_coded.errors import PluginError
    from mpi_coded.runtime.core import faults as runtime_faults

    class Broken(plugin.FaultMode):
        name, usage, summary = "broken", "broken:RANK:PHASE", "raises"

        def fire(self, fault, ctx):
            raise RuntimeError("cannot fire")

    class Comm:
        def Get_rank(self):  # noqa: N802 - mpi4py's name
            return 1

    with FAULTS.registered(Broken(), origin="broken.py"):
        f = parse_fault("broken:1:step", "cec", 7)
        with pytest.raises(PluginError, match=r"^plugin broken.py: fault mode 'broken': "
                                              r"RuntimeError: cannot fire$"):
            runtime_faults.at_phase((f,), Comm(), "step", 1)  # type: ignore[arg-type]


def test_a_plugin_policy_failing_at_a_step_is_a_plugin_error_naming_it():
    from mpi_coded.cec.plan import make_plan
    from mpi_coded.errors import PluginError

    class Raises(plugin.ElasticPolicy):
        def assign(self, speeds, lp, available, rows, prev):
            raise KeyError("no such machine")

    with POLICIES.registered(Raises("raises", "x"), origin="r.py"):
        with pytest.raises(PluginError, match=r"^plugin r.py: policy 'raises': KeyError"):
            make_plan("raises", plugins.WORKED_SPEEDS, 3, (1, 2, 3, 4))


def test_a_copy_code_encodes_and_decodes_by_gathers_over_every_field():
    import numpy as np

    from mpi_coded.fields import get_field

    m, R = 6, 2
    t = np.arange(m, dtype=np.int64)
    layout = plugin.CodeLayout(m=m, r=R * m, msg_index=t[:, None].copy(),
                               coded_index=np.stack([t, t + m], axis=1))
    for name in ("gf2^8", "float64"):
        f = get_field(name)
        code = plugin.CopyCode(layout, f)
        A = np.arange(m * 3).reshape(m, 3).astype(f.dtype)
        C = code.encode(A)
        assert C.shape == (R * m, 3) and (C[:m] == A).all() and (C[m:] == A).all()
        rows = [6, 7, 2, 3, 10, 5]  # one copy of every row of A, from either half
        assert (code.decode(rows, C[rows]) == A).all()
        assert code.encode_work(None, 3).algorithms and code.decode_work(rows, 3)
        with pytest.raises(plugin.NotDecodable, match=r"rows \[0\] of A have no copy"):
            code.decode([1, 2, 3, 4, 5], C[[1, 2, 3, 4, 5]])
