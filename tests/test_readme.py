"""The README is a front door: what the project is, then the Quickstart, then what to do.

Held here: the Quickstart heading and both of its commands sit within the first 40 lines,
the commands verbatim (CI runs them as written: `.ci/run` the second); measured figures
appear only in the one short table of headline ratios, whose every row links to the
section or run that measured it; and every relative link of the README resolves to a file
(and, with a fragment, to a heading or anchor) that exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

FIRST_LINES = 40
CMD_RUN = (
    "python3 -m venv .venv && .venv/bin/pip install -e '.[local]' && "
    ".venv/bin/mpiexec -n 7 .venv/bin/mpi-coded run cec"
)
CMD_TEST = (
    "python3 -m venv .venv && .venv/bin/pip install -q -e '.[local,test]' && "
    ".venv/bin/python -m pytest"
)
MAX_TABLE_ROWS = 12

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`]*`")
LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"", re.IGNORECASE)

# A measured-looking figure: a number followed by a times sign ("0.83x", "1.37-1.38x",
# "2.23x"), a percentage ("12-15%", "20 %"), milliseconds or microseconds ("30 ms"), or
# seconds with a decimal point ("2.96 s"). "2x2" (a size) and "x86" are not figures.
MEASURED = re.compile(
    r"\d[x×](?![\w^])"
    r"|\d\s?%"
    r"|\b\d+(?:\.\d+)?\s?(?:ms|us|µs)\b"
    r"|\b\d+\.\d+\s?s\b"
)


def lines() -> list[str]:
    return README.read_text(encoding="utf-8").splitlines()


def outside_code(text_lines: list[str]) -> list[tuple[int, str]]:
    """(1-based line number, line) of the lines outside fenced code blocks."""
    out: list[tuple[int, str]] = []
    fenced = False
    for n, line in enumerate(text_lines, start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((n, line))
    return out


def tables(text_lines: list[str]) -> list[list[tuple[int, str]]]:
    """Each markdown table outside code blocks: its consecutive lines starting with '|'."""
    found: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] = []
    last = -1
    for n, line in outside_code(text_lines):
        if line.lstrip().startswith("|"):
            if current and n != last + 1:
                found.append(current)
                current = []
            current.append((n, line))
            last = n
        elif current:
            found.append(current)
            current = []
    if current:
        found.append(current)
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markdown stripped, lower case, punctuation
    dropped (letters, digits, '_', '-' and spaces kept), spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor of a markdown file: heading slugs (with GitHub's -1, -2, ... for
    repeats) and explicit <a id/name> anchors."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    text_lines = path.read_text(encoding="utf-8").splitlines()
    for _, line in outside_code(text_lines):
        found.update(HTML_ANCHOR.findall(line))
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        k = seen.get(base, 0)
        found.add(base if k == 0 else f"{base}-{k}")
        seen[base] = k + 1
    return found


def links(text_lines: list[str]) -> list[tuple[int, str]]:
    """(line, target) of every link and image outside code blocks and code spans."""
    out: list[tuple[int, str]] = []
    for n, line in outside_code(text_lines):
        bare = INLINE_CODE.sub("", line)
        out += [(n, m.group(2)) for m in LINK.finditer(bare)]
        out += [(n, m.group(2)) for m in IMAGE.finditer(bare)]
    return out


def is_relative(target: str) -> bool:
    return not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) and not target.startswith("//")


def broken(source: Path, target: str) -> str | None:
    """Why a relative link from ``source`` does not resolve, or None when it does."""
    path_part, _, fragment = target.partition("#")
    dest = source if not path_part else (source.parent / path_part).resolve()
    if not dest.exists():
        shown = dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest
        return f"{target}: no such file {shown}"
    if fragment and dest.is_file() and dest.suffix == ".md" and fragment not in anchors(dest):
        return f"{target}: no heading or anchor #{fragment} in {dest.relative_to(ROOT)}"
    return None


def test_the_quickstart_heading_is_within_the_first_40_lines() -> None:
    head = lines()[:FIRST_LINES]
    quick = [n for n, line in enumerate(head) if re.match(r"^#{1,3}\s+Quickstart\b", line)]
    assert quick, f"no '## Quickstart' heading in the README's first {FIRST_LINES} lines"


@pytest.mark.parametrize("command", [CMD_RUN, CMD_TEST], ids=["run-cec", "pytest"])
def test_both_quickstart_commands_are_there_verbatim_within_the_first_40_lines(
        command: str) -> None:
    head = lines()[:FIRST_LINES]
    quick = next(n for n, line in enumerate(head) if re.match(r"^#{1,3}\s+Quickstart\b", line))
    where = [n for n, line in enumerate(head) if line.strip() == command]
    assert where, f"the Quickstart command is not verbatim on a line of its own in the " \
                  f"first {FIRST_LINES} lines:\n{command}"
    assert where[0] > quick, "the command comes before the Quickstart heading"
    # inside a fenced block, so that it copies as one command
    fenced = {n for n, _ in outside_code(lines())}
    assert where[0] + 1 not in fenced, "the command is not inside a code block"


def test_ci_runs_the_second_quickstart_command_verbatim() -> None:
    ci = ROOT / ".ci" / "run"
    if not ci.exists():
        pytest.skip(".ci/run is not in this checkout")
    assert CMD_TEST in [ln.strip() for ln in ci.read_text(encoding="utf-8").splitlines()]


def test_there_is_one_short_table_of_headline_ratios_each_row_linked() -> None:
    found = tables(lines())
    assert len(found) == 1, f"expected ONE table in the README, found {len(found)} " \
                            f"(at lines {[t[0][0] for t in found]})"
    table = found[0]
    header, separator, *rows = table
    assert re.match(r"^\|\s*:?-{3,}", separator[1]), "the table has no separator row"
    assert 1 <= len(rows) <= MAX_TABLE_ROWS, f"{len(rows)} rows: not a short table"
    for n, row in rows:
        targets = [m.group(2) for m in LINK.finditer(INLINE_CODE.sub("", row))]
        assert targets, f"README line {n}: a headline without a link to what measured it"
        assert any(re.match(r"^docs/(benchmarks\.md#|runs/)", t) for t in targets), \
            f"README line {n}: link neither a docs/benchmarks.md section nor a docs/runs/ file"


def test_the_headline_tables_links_resolve_to_existing_files_and_anchors() -> None:
    (table,) = tables(lines())
    problems = []
    for n, row in table:
        for m in LINK.finditer(INLINE_CODE.sub("", row)):
            why = broken(README, m.group(2))
            if why:
                problems.append(f"README line {n}: {why}")
    assert not problems, "\n".join(problems)


def test_no_measured_figure_outside_the_headline_table() -> None:
    text_lines = lines()
    in_table = {n for t in tables(text_lines) for n, _ in t}
    offenders = []
    for n, line in outside_code(text_lines):
        if n in in_table:
            continue
        bare = LINK.sub(r"\1", INLINE_CODE.sub("", line))
        m = MEASURED.search(bare)
        if m:
            offenders.append(f"README line {n}: {m.group(0)!r} in: {line.strip()}")
    assert not offenders, "measured figures belong in docs/benchmarks.md (or the headline " \
                          "table):\n" + "\n".join(offenders)


def test_every_relative_link_in_the_readme_resolves() -> None:
    found = [(n, t) for n, t in links(lines()) if is_relative(t)]
    assert found, "no relative links found: the link pattern is broken"
    problems = [f"README line {n}: {why}" for n, t in found if (why := broken(README, t))]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("text, figure", [
    ("took 0.83x uc's", True),
    ("1.37-1.38x (seed schedule)", True),
    ("an IQR of 12-15% of their median", True),
    ("about 30 ms per step", True),
    ("cmr 2.96-2.99 s against", True),
    ("a 2x2 sweep", False),
    ("machines {}, {4}, {4, 6} and {1, 4, 6} preempted", False),
    ("python3 (3.10 or newer)", False),
    ("GF(2^8) and GF(2^16)", False),
    ("speeds (1, 1, 1.5, 1.5, 2, 2), L = 3", False),
])
def test_the_measured_figure_pattern(text: str, figure: bool) -> None:
    assert bool(MEASURED.search(text)) is figure


@pytest.mark.parametrize("heading, anchor", [
    ("The elastic job: `scripts/bench_cec.py`", "the-elastic-job-scriptsbench_cecpy"),
    ("The paper's own size", "the-papers-own-size"),
    ("Part A — Heterogeneous coded elastic computing",
     "part-a--heterogeneous-coded-elastic-computing"),
    ("(A.3) Optimal load", "a3-optimal-load"),
    ("BDC against unified at m = 1800, beside the fitted model",
     "bdc-against-unified-at-m--1800-beside-the-fitted-model"),
])
def test_the_anchor_of_a_heading_is_githubs(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor
