"""A bounded schemathesis pass over the image's REST API (``/v1/openapi.json``): every operation, with
valid and schema-violating data, checked for no 5xx, only documented status codes, bodies matching the
documented schemas, schema-violating data refused, and 405s with a true ``Allow`` header.

It runs against a container of its own, never a bare gateway: fuzzed commands, code and file writes stay
inside that container, which is thrown away afterwards. The container runs with the browser (the image's
default, no DISABLE_BROWSER): the ``/v1/browser/*`` operations reach a live Chromium, and the browser must
still answer after the run. The run has a fixed time budget (schemathesis'
``--max-time``: coverage first, then fuzzing and stateful sequences until the budget is spent) and a
fixed seed; AGENTBOX_FUZZ_SECONDS and AGENTBOX_FUZZ_SEED change them. The checks and the one
per-operation exception are in schemathesis.toml beside this file."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import httpx
import pytest

from .dockerbox import Box, start_box

pytestmark = pytest.mark.docker

CONFIG = Path(__file__).with_name("schemathesis.toml")
BUDGET = int(os.environ.get("AGENTBOX_FUZZ_SECONDS", "150"))
SEED = os.environ.get("AGENTBOX_FUZZ_SEED", "20261201")
#: Far fewer cases than this means the run did not really exercise the API (a few thousand are usual).
MIN_CASES = 1000


@pytest.fixture(scope="module")
def fuzz_key() -> str:
    return secrets.token_hex(16)


@pytest.fixture(scope="module")
def fuzz_box(docker_client: docker.DockerClient, agentbox_image: str, fuzz_key: str) -> Iterator[Box]:
    started = start_box(docker_client, agentbox_image, {"AIO_API_KEY": fuzz_key}, published=(8091,))
    started.wait_state("browser", "RUNNING")
    started.wait_http(8091, "/v1/browser/info", headers={"Authorization": f"Bearer {fuzz_key}"})
    yield started
    started.remove()


def run_schemathesis(url: str, key: str, report: Path) -> subprocess.CompletedProcess[str]:
    """The schemathesis CLI, run in the report's folder (its Hypothesis database stays out of the checkout)."""
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(CONFIG),
        "run",
        url,
        "--max-time",
        str(BUDGET),
        "--seed",
        SEED,
        "--no-color",
        "--report",
        "json",
        "--report-json-path",
        str(report),
    ]
    environment = {**os.environ, "AGENTBOX_FUZZ_KEY": key}
    return subprocess.run(
        command, capture_output=True, text=True, timeout=BUDGET + 180, cwd=report.parent, env=environment
    )


def test_rest_api_passes_a_bounded_schemathesis_run(fuzz_box: Box, fuzz_key: str, tmp_path: Path) -> None:
    report_path = tmp_path / "schemathesis.json"
    finished = run_schemathesis(fuzz_box.url(8091, "/v1/openapi.json"), fuzz_key, report_path)
    output = finished.stdout[-12000:] + finished.stderr[-3000:]
    assert report_path.exists(), f"schemathesis wrote no report (exit {finished.returncode}):\n{output}"
    report: dict[str, Any] = json.loads(report_path.read_text())
    failures = [f"{f['code']} {f['title']}: {', '.join(f['operations'])}" for f in report["failures"]]
    assert not failures and not report["errors"], "\n".join(failures) + "\n" + output
    assert finished.returncode == 0, output
    cases = report["test_cases"]
    print(
        f"schemathesis: {cases['generated']} cases over {report['operations']['tested']} operations "
        f"in {report['running_time']:.0f} s, seed {SEED}"
    )
    assert cases["generated"] >= MIN_CASES, f"only {cases['generated']} cases ran:\n{output}"
    assert report["operations"]["tested"] == report["operations"]["selected"] > 50, report["operations"]
    assert httpx.get(fuzz_box.url(8091, "/health"), timeout=10).status_code == 200, fuzz_box.logs()
    browser = httpx.get(
        fuzz_box.url(8091, "/v1/browser/info"), headers={"Authorization": f"Bearer {fuzz_key}"}, timeout=30
    )
    assert browser.status_code == 200, f"the browser no longer answers after the run: {browser.text}"
