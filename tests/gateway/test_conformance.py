"""The official MCP conformance suite against a real gateway (no key: the suite sends no headers)."""

from __future__ import annotations

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
        [node, cli, "server", "--url", f"http://localhost:{port}/mcp", "--expected-failures", str(BASELINE),
         "-o", str(tmp_path / "results")],
        capture_output=True, text=True, timeout=600,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-6000:]
    for scenario in REQUIRED:
        assert f"✓ {scenario}" in output, f"{scenario} did not pass:\n{output[-6000:]}"
