"""The README as a front door and the docs it leads to: short, its first two commands the ones that
run the stack and the suite (CI runs the second), every relative link between the Markdown files
landing on a file and a heading that exist, its benchmark figures and variables those the reference
records, and the MCP tools page listing the built-in tools in the order the gateway publishes them."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.support.builtin_tools import BUILTIN_TOOLS

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [
    README,
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "bench" / "RESULTS.md",
    *sorted((ROOT / "images").glob("**/README.md")),
    *sorted((ROOT / "deploy").glob("*/README.md")),
]
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_CODE = re.compile(r"`[^`]*`")


def section(page: Path, heading: str) -> str:
    return page.read_text(encoding="utf-8").split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def rows(text: str) -> list[list[str]]:
    """The cells of a Markdown table's body rows (header and separator left out)."""
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines[1:]]


def figures(cell: str) -> list[str]:
    """The numbers a cell states, outside code (``python3``, ``1280x720`` are names, not figures)."""
    return _NUMBER.findall(_CODE.sub("", cell))


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", _FENCE.sub("", page.read_text(encoding="utf-8")), re.M):
        base = slug(heading)
        anchor, n = base, 0
        while anchor in found:
            n += 1
            anchor = f"{base}-{n}"
        found.add(anchor)
    return found


def test_the_readme_is_at_most_200_lines() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200


def test_the_first_two_commands_run_the_stack_and_the_suite_and_ci_runs_the_second() -> None:
    first_block = re.search(r"^```sh\n(.*?)^```", README.read_text(encoding="utf-8"), re.M | re.S)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert commands == ["scripts/up", "scripts/test"]
    for command in commands:
        assert os.access(ROOT / command, os.X_OK), f"{command} is not an executable file"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^scripts/test \"\$@\"", ci, re.M), ".ci/run must run the README's test command"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_lands_on_a_file_and_heading(page: Path) -> None:
    broken = []
    for target in _LINK.findall(_FENCE.sub("", page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        landing = (page.parent / path).resolve() if path else page
        if not landing.exists():
            broken.append(f"{target}: no {landing.relative_to(ROOT)}")
        elif anchor and landing.suffix == ".md" and anchor not in anchors(landing):
            broken.append(f"{target}: no heading #{anchor} in {landing.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_mcp_tools_page_lists_the_built_in_tools_in_their_order() -> None:
    page = (ROOT / "docs" / "mcp-tools.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| \d+ \| `([a-z_]+)` \|", page, re.M)
    assert listed == BUILTIN_TOOLS


def test_each_benchmark_figure_of_the_readme_is_a_row_of_bench_results() -> None:
    """The README's table holds figures recorded in bench/RESULTS.md: each row's agentbox and
    baseline figures all stand in one dated row there (a figure edited in one place only fails)."""
    recorded = [figures(" ".join(cells)) for cells in rows((ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8"))]
    table = rows(section(README, "Benchmarks"))
    assert len(table) >= 5
    for benchmark, agentbox, baseline, _measured in table:
        wanted = figures(agentbox) + figures(baseline)
        assert wanted, f"{benchmark}: no figure"
        assert any(all(n in row for n in wanted) for row in recorded), (
            f"README's {benchmark!r}: {wanted} are in no row of bench/RESULTS.md"
        )


def test_each_variable_the_readme_names_has_a_row_in_the_configuration_page() -> None:
    names = set(re.findall(r"`([A-Z][A-Z0-9]*_[A-Z0-9_]+)`", README.read_text(encoding="utf-8")))
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    documented = {
        v
        for line in page.splitlines()
        if line.startswith("| `")
        for v in re.findall(r"`([A-Z][A-Z0-9_]+)`", line.split("|")[1])
    }
    missing = sorted(names - documented)
    assert "AIO_API_KEY" in names
    assert not missing, f"README names variables docs/configuration.md has no row for: {missing}"
