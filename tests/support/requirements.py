"""Checks for outside requirements (Docker engine, Chromium, Node 22). Missing ones skip the test
with a clear reason on a developer machine and fail it in CI (``CI`` or ``AGENTBOX_REQUIRE_ALL`` set)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

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
