"""Checks for outside requirements (Docker engine, Chromium, Node 22). Missing ones skip the test
with a clear reason on a developer machine and fail it in CI (``CI`` or ``AGENTBOX_REQUIRE_ALL`` set)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

STRICT = bool(os.environ.get("CI") or os.environ.get("AGENTBOX_REQUIRE_ALL"))


def missing(reason: str) -> None:
    if STRICT:
        pytest.fail(f"required in CI but missing: {reason}", pytrace=False)
    pytest.skip(reason)


def needs_program(program: str, package: str) -> pytest.MarkDecorator:
    """Skips the test when ``program`` is not on PATH, except in CI, where the test runs (and fails)."""
    return pytest.mark.skipif(
        not STRICT and shutil.which(program) is None, reason=f"{program} is not installed (Debian: {package})"
    )


def require_program(program: str, package: str) -> str:
    path = shutil.which(program)
    if path is None:
        missing(f"{program} is not installed (Debian: {package})")
        raise AssertionError("unreachable")
    return path


@functools.cache
def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def require_chromium() -> str:
    path = chromium_path()
    if path is None:
        missing("Chromium is not installed (apt-get install chromium)")
    return path


@functools.cache
def _docker_ok() -> str | None:
    try:
        import docker

        client = docker.from_env()
        client.ping()
        client.close()
        return None
    except Exception as exc:  # any failure means: no usable engine
        return f"no Docker engine reachable ({type(exc).__name__}: {exc}); install docker.io and start dockerd"


def require_docker() -> None:
    problem = _docker_ok()
    if problem:
        missing(problem)


def require_node22() -> str:
    node = os.environ.get("AGENTBOX_NODE22")
    candidates = [node] if node else [shutil.which("node")]
    for candidate in candidates:
        if candidate and os.path.exists(candidate):
            version = subprocess.run([candidate, "--version"], capture_output=True, text=True).stdout.strip()
            if version.startswith("v2") and int(version[1:].split(".")[0]) >= 22:
                return candidate
    missing("Node >= 22 is needed for the MCP conformance suite (set AGENTBOX_NODE22)")
    raise AssertionError("unreachable")


def require_npm() -> str:
    """npm (with Node >= 18 beside it), for tests that install a public npm package."""
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm and node:
        version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
        if version.startswith("v") and int(version[1:].split(".")[0]) >= 18:
            return npm
    missing("npm and Node >= 18 are needed to install @agent-infra/mcp-server-browser (apt-get install npm)")
    raise AssertionError("unreachable")


def npm_installed(package: str, folder: str, *, ignore_scripts: bool = False) -> Path:
    """The ``node_modules`` of ``package``, installed once into ``folder`` of the test cache
    (``AGENTBOX_TEST_CACHE``). The install goes to a folder of its own that is renamed into place
    only when complete, so an install cut short (a killed run, a second worker) leaves nothing half
    written for the next run to trip over."""
    npm = require_npm()
    cache = Path(os.environ.get("AGENTBOX_TEST_CACHE", Path.home() / ".cache" / "agentbox-tests"))
    prefix = cache / folder
    if not (prefix / ".complete").exists():
        cache.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f"{folder}.installing-", dir=cache))
        command = [npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund", package]
        if ignore_scripts:
            command.append("--ignore-scripts")
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, f"npm install {package} failed:\n{done.stderr[-2000:]}"
            (staging / ".complete").touch()
            shutil.rmtree(prefix, ignore_errors=True)  # a half install from before this helper
            try:
                staging.rename(prefix)
            except OSError:  # another worker put its complete install there first
                if not (prefix / ".complete").exists():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return prefix / "node_modules"
