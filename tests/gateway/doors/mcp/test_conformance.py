"""The official MCP conformance suite against a real gateway (no key: the suite sends no headers)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.conformance import conformance_cli, node22

BASELINE = Path(__file__).with_name("conformance-baseline.yml")
REQUIRED = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"]


@pytest.mark.node22
def test_conformance_suite_matches_the_baseline(gateway: str, tmp_path: Path) -> None:
    node, cli = node22(), conformance_cli()
    port = gateway.rsplit(":", 1)[1]
    run = subprocess.run(
        [
            node,
            cli,
            "server",
            "--url",
            f"http://localhost:{port}/mcp",
            "--expected-failures",
            str(BASELINE),
            "-o",
            str(tmp_path / "results"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-6000:]
    for scenario in REQUIRED:
        assert f"✓ {scenario}" in output, f"{scenario} did not pass:\n{output[-6000:]}"
    check_reasons(tmp_path / "results")


def baseline_reasons() -> dict[str, str]:
    """Each expected failure's reason, the comment after it in the baseline."""
    entries = re.findall(r"^  - ([\w-]+)\s*(?:#\s*(.*))?$", BASELINE.read_text(), re.MULTILINE)
    return {scenario: reason or "" for scenario, reason in entries}


def first_error(results: Path, scenario: str) -> str:
    [checks] = results.glob(f"server-{scenario}-*/checks.json")
    return next((c.get("errorMessage", "") for c in json.loads(checks.read_text()) if c.get("errorMessage")), "")


def check_reasons(results: Path) -> None:
    """A reason that names a JSON-RPC code or a missing fixture tool says what really failed first."""
    for scenario, reason in baseline_reasons().items():
        error = first_error(results, scenario)
        if code := re.search(r"-32\d{3}", reason):
            assert f"MCP error {code[0]}" in error, f"{scenario}: baseline says {reason!r}, the suite: {error!r}"
        elif tool := re.search(r"fixture tool (\w+) does not exist", reason):
            assert f"unknown tool: {tool[1]}" in error, f"{scenario}: baseline says {reason!r}, the suite: {error!r}"
