"""``aiod doctor``: what the gateway needs and can use on this machine, probed the way the planes
use it (the same executables on the same ``PATH``, the same CDP URL, each registered upstream's
``tools/list``). Required checks failing make the gateway unable to serve its core tools; optional
ones only switch a capability off (JavaScript, the browser, an upstream's tools). Every detail is
printed with its credentials redacted (a CDP URL's password or ``?token=``, an upstream URL's key)."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import httpx

from agentbox_common.http import plain_http_only
from agentbox_common.logging import redact

from .settings import GatewaySettings
from .upstreams.client import UpstreamClient, UpstreamRpcError, UpstreamUnavailable
from .upstreams.config import parse_upstreams

PROBE_TIMEOUT = 3.0


@dataclass(frozen=True)
class Check:
    name: str
    required: bool
    ok: bool
    detail: str


async def _version(executable: str, *args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        executable, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), PROBE_TIMEOUT)
    except TimeoutError:
        process.kill()
        await process.wait()
        return f"{executable} (no answer to {' '.join(args)} within {PROBE_TIMEOUT:g} s)"
    first = output.decode(errors="replace").strip().splitlines()
    return f"{executable}: {first[0] if first else 'no version output'}"


async def _executable(name: str, required: bool, purpose: str, *version_args: str) -> Check:
    found = shutil.which(name)
    if found is None:
        return Check(name, required, False, f"not on PATH ({purpose})")
    return Check(name, required, True, await _version(found, *version_args))


def _writable(name: str, directory: Path, required: bool) -> Check:
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".aiod-doctor-"):
            pass
    except OSError as exc:
        return Check(name, required, False, f"{directory}: {exc.strerror or exc}")
    return Check(name, required, True, f"{directory} is writable")


async def _cdp(cdp_url: str) -> Check:
    try:
        async with httpx.AsyncClient(timeout=PROBE_TIMEOUT, trust_env=False, verify=plain_http_only()) as client:
            answer = (await client.get(f"{cdp_url}/json/version")).json()
    except (httpx.HTTPError, ValueError) as exc:
        return Check("chromium", False, False, f"{cdp_url}: {type(exc).__name__}: {exc}")
    return Check("chromium", False, True, f"{cdp_url}: {answer.get('Browser', 'unknown browser')}")


async def _upstream(client: UpstreamClient) -> Check:
    name = f"upstream:{client.name}"
    try:
        tools = await client.list_tools()
    except (UpstreamUnavailable, UpstreamRpcError) as exc:
        return Check(name, False, False, f"{client.config.url}: {exc}")
    finally:
        await client.aclose()
    return Check(name, False, True, f"{client.config.url}: {len(tools)} tools")


def _filesystem_checks(settings: GatewaySettings) -> list[Check]:
    checks = [_writable("home", Path.home(), True)]
    workspace = Path(os.environ.get("AICODEBOX_WORKSPACE") or "/workspace")
    if workspace.is_dir():
        checks.append(_writable("workspace", workspace, False))
    skills = settings.skills_path
    found = skills.is_dir()
    checks.append(Check("skills", False, found, f"{skills} {'exists' if found else 'is missing'}"))
    return checks


async def run_checks(settings: GatewaySettings) -> list[Check]:
    """Every probe, concurrently; each is bounded by :data:`PROBE_TIMEOUT` (upstreams by the list timeout)."""
    upstreams = [
        UpstreamClient(config, list_timeout=settings.upstream_list_timeout, call_timeout=PROBE_TIMEOUT)
        for config in parse_upstreams(settings.mcp_servers)
    ]
    probes = await asyncio.gather(
        _executable("bash", True, "sandbox_execute_bash and /v1/shell", "--version"),
        _executable("python3", True, "sandbox_execute_code python", "--version"),
        _executable("node", False, "sandbox_execute_code javascript", "--version"),
        _executable("npm", False, "sandbox_get_packages nodejs", "--version"),
        _executable("rg", False, "listed as a search tool in sandbox_get_context", "--version"),
        _cdp(settings.cdp_url),
        *(_upstream(client) for client in upstreams),
    )
    checks = [*probes[:5], *_filesystem_checks(settings), *probes[5:]]
    return [replace(check, detail=redact(check.detail)) for check in checks]


def format_table(checks: list[Check]) -> str:
    rows = [("check", "status", "detail")]
    for check in checks:
        status = "ok" if check.ok else ("MISSING" if check.required else "warn")
        rows.append((check.name, status, check.detail))
    width = [max(len(row[column]) for row in rows) for column in range(2)]
    return "\n".join(f"{name:<{width[0]}}  {status:<{width[1]}}  {detail}" for name, status, detail in rows)


def healthy(checks: list[Check]) -> bool:
    """Whether every required check passed (the exit status of ``aiod doctor``)."""
    return all(check.ok for check in checks if check.required)
