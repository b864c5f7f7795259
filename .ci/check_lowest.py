"""Check that .ci/lowest-constraints.txt pins exactly the lower bounds of pyproject.toml.

Every ``name>=version`` of ``[project] dependencies`` and of the ``test`` extra must be
pinned ``name==version`` in the constraints file, and nothing else may be pinned there.
Exit 1 with one line per disagreement.  Run by .ci/run before the lowest-versions job.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def release(version: str | None) -> tuple[int, ...] | None:
    """``"4.1"`` and ``"4.1.0"`` alike: the release numbers without trailing zeros."""
    if version is None:
        return None
    nums = [int(x) for x in re.findall(r"\d+", version)]
    while nums and nums[-1] == 0:
        nums.pop()
    return tuple(nums)


def main() -> int:
    try:
        import tomllib
    except ImportError:  # Python 3.10: no TOML parser in the standard library
        print("check_lowest: python3 < 3.11, constraints not compared with pyproject.toml")
        return 0
    with open(ROOT / "pyproject.toml", "rb") as f:
        proj = tomllib.load(f)["project"]
    bounds = {}
    for req in proj["dependencies"] + proj["optional-dependencies"]["test"]:
        m = re.match(r"\s*([A-Za-z0-9_.-]+)\s*>=\s*([^,;\s]+)\s*(;.*)?$", req)
        if m:
            bounds[norm(m[1])] = (m[2], bool(m[3]))
    pins = {}
    for line in (ROOT / ".ci" / "lowest-constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[norm(name)] = version.strip()
    bad = []
    for n in sorted(bounds.keys() | pins.keys()):
        bound, marker = bounds.get(n, (None, False))
        if n not in pins and marker:
            continue  # e.g. tomli; python_version < '3.11': not installed here
        if release(bound) != release(pins.get(n)):
            bad.append(n)
            print(f"check_lowest: {n}: pyproject.toml >= {bound}, "
                  f".ci/lowest-constraints.txt == {pins.get(n)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
