"""``aiod doctor``: what the gateway needs and can use on this machine, probed the way the planes
use it (the same executables on the same ``PATH``, the same CDP URL), as the sandbox user (started as
root, as ``docker compose exec`` does, it becomes the image's ``AGENTBOX_USER`` first), and the
upstreams as the running gateway aggregates them (asked over ``/v1/mcp``; each configured upstream's
``tools/list`` directly when no gateway answers). Required checks failing make the gateway unable
to serve its core tools; optional ones only switch a capability off (JavaScript, the browser, an
upstream's tools). Every detail is printed with its credentials redacted (a CDP URL's password or
``?token=``, an upstream URL's key)."""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import httpx

from agentbox_common.http import plain_http_only
from agentbox_common.logging import redact
from agentbox_common.processes import hide_own_environment, kill_process_group, spawn_sandboxed

from .doors.rest.mcp_servers import BUILTIN_SERVER
from .settings import DoctorSettings, GatewaySettings
from .upstreams.client import UpstreamClient, UpstreamRpcError, UpstreamUnavailable
from .upstreams.config import parse_upstreams

#: The most one probe may take (seconds). Generous: ``npm --version`` alone takes over 3 s on a busy
#: two-core machine, and the probes run at once, so the total is the slowest one's time.
PROBE_TIMEOUT = 20.0


@dataclass(frozen=True)
class Check:
    name: str
    required: bool
    ok: bool
    detail: str


async def _version(executable: str, *args: str) -> str:
    process = await spawn_sandboxed(executable, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        output, _ = await asyncio.wait_for(process.communicate(), PROBE_TIMEOUT)
    except TimeoutError:
        kill_process_group(process.pid)
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


async def _gateway(url: str, api_key: str) -> list[Check] | None:
    """The running gateway's row (its built-in tools), then each upstream it aggregates with the tools
    it publishes for it; None when nothing answers at ``url``."""
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=PROBE_TIMEOUT, trust_env=False, verify=plain_http_only()
    ) as client:

        async def tools(server: str) -> int | str:
            """How many tools ``server`` has, or why that is not known."""
            try:
                answer = await client.get(f"/v1/mcp/{server}/tools")
                body = answer.json()
                if answer.status_code == 200:
                    return len(body["data"]["tools"])
                if answer.status_code == 401:
                    return "401: a key is needed (AIO_API_KEY)"
                return f"{answer.status_code}: {body.get('message') or body.get('detail')}"
            except httpx.HTTPError as exc:
                return f"{type(exc).__name__}: {exc}"
            except (ValueError, KeyError, TypeError, AttributeError):
                return f"{answer.status_code}: not an agentbox gateway's answer"

        try:
            answer = await client.get("/v1/mcp/servers")
        except httpx.HTTPError:
            return None
        if answer.status_code == 401:
            return [Check("gateway", False, False, f"{url}: 401, a key is needed (AIO_API_KEY)")]
        try:
            names = [str(name) for name in answer.json()["data"] if name != BUILTIN_SERVER]
        except (ValueError, KeyError, TypeError):
            return [Check("gateway", False, False, f"{url}: /v1/mcp/servers answered {answer.status_code}")]
        counts = await asyncio.gather(tools(BUILTIN_SERVER), *(tools(name) for name in names))

    def row(name: str, count: int | str, where: str) -> Check:
        ok = isinstance(count, int)
        return Check(name, False, ok, f"{where}: {count} tools" if ok else f"{where}: {count}")

    builtin = row("gateway", counts[0], url)
    return [
        replace(builtin, detail=f"{builtin.detail} built in"),
        *(row(f"upstream:{n}", c, f"via {url}") for n, c in zip(names, counts[1:], strict=True)),
    ]


def _filesystem_checks(settings: GatewaySettings) -> list[Check]:
    checks = [_writable("home", Path.home(), True)]
    workspace = Path(os.environ.get("AICODEBOX_WORKSPACE") or "/workspace")
    if workspace.is_dir():
        checks.append(_writable("workspace", workspace, False))
    skills = settings.skills_path
    found = skills.is_dir()
    checks.append(Check("skills", False, found, f"{skills} {'exists' if found else 'is missing'}"))
    return checks


async def _upstreams(settings: GatewaySettings, gateway_url: str) -> list[Check]:
    """The running gateway's view of its upstreams, else (no gateway) each configured one asked directly."""
    found = await _gateway(gateway_url, settings.api_key)
    if found is not None:
        return found
    clients = [
        UpstreamClient(config, list_timeout=PROBE_TIMEOUT, call_timeout=PROBE_TIMEOUT)
        for config in parse_upstreams(settings.mcp_servers)
    ]
    missing = Check("gateway", False, False, f"{gateway_url}: no answer; upstreams configured here asked directly")
    return [missing, *await asyncio.gather(*(_upstream(client) for client in clients))]


def sandbox_account(doctor: DoctorSettings) -> pwd.struct_passwd | None:
    """The sandbox user's account when this runs as root and the image names one (``AGENTBOX_USER``),
    with ``HOME``, ``USER`` and ``LOGNAME`` set to it, so that settings read next (``~/skills``) are
    the sandbox user's; None otherwise (checked as whoever runs it)."""
    if os.geteuid() != 0 or doctor.sandbox_user in ("", "root"):
        return None
    try:
        account = pwd.getpwnam(doctor.sandbox_user)
    except KeyError:
        return None
    os.environ.update(HOME=account.pw_dir, USER=account.pw_name, LOGNAME=account.pw_name)
    return account


def become(account: pwd.struct_passwd | None) -> None:
    """Drop root for the sandbox user (groups, gid, uid), after the settings (a key file only root
    reads) are loaded; the process is then not dumpable, so the key it holds stays unreadable."""
    if account is None:
        return
    os.initgroups(account.pw_name, account.pw_gid)
    os.setgid(account.pw_gid)
    os.setuid(account.pw_uid)
    hide_own_environment()


def _user(doctor: DoctorSettings) -> Check:
    uid = os.geteuid()
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = f"uid {uid}"
    detail = f"checked as {name} (HOME {Path.home()})"
    if uid == 0 and doctor.sandbox_user not in ("", "root"):
        return Check("user", False, False, f"{detail}: AGENTBOX_USER {doctor.sandbox_user!r} has no account here")
    return Check("user", False, True, detail)


async def _sandboxd(settings: GatewaySettings) -> list[Check]:
    """sandboxd's two listeners answer (``/v1/health``, a TCP connect to the gRPC port) and its root is
    writable; one passing row when it is off."""
    if not settings.sandboxd_enabled:
        return [Check("sandboxd", False, True, "off (SANDBOXD_ENABLED=true serves it)")]
    host = settings.sandboxd_host
    host = "127.0.0.1" if host in ("", "0.0.0.0") else "::1" if host == "::" else host
    shown = f"[{host}]" if ":" in host else host
    health = f"http://{shown}:{settings.sandboxd_rest_port}/v1/health"
    try:
        async with httpx.AsyncClient(timeout=PROBE_TIMEOUT, verify=plain_http_only()) as client:
            answer = await client.get(health)
        rest = Check("sandboxd rest", False, answer.status_code == 200, f"{health}: {answer.status_code}")
    except httpx.HTTPError as exc:
        rest = Check("sandboxd rest", False, False, f"{health}: {type(exc).__name__}: {exc}")
    where = f"{shown}:{settings.sandboxd_grpc_port}"
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, settings.sandboxd_grpc_port), PROBE_TIMEOUT)
        writer.close()
        grpc = Check("sandboxd grpc", False, True, f"{where} accepts connections")
    except (OSError, TimeoutError) as exc:
        grpc = Check("sandboxd grpc", False, False, f"{where}: {exc}")
    return [rest, grpc, _writable("sandboxd root", settings.sandboxd_root, False)]


async def run_checks(settings: GatewaySettings, doctor: DoctorSettings) -> list[Check]:
    """Every probe, concurrently; each is bounded by :data:`PROBE_TIMEOUT`."""
    executables, (cdp, upstreams, sandboxd) = await asyncio.gather(
        asyncio.gather(
            _executable("bash", True, "sandbox_execute_bash and /v1/shell", "--version"),
            _executable("python3", True, "sandbox_execute_code python", "--version"),
            _executable("node", False, "sandbox_execute_code javascript", "--version"),
            _executable("npm", False, "sandbox_get_packages nodejs", "--version"),
            _executable("rg", False, "listed as a search tool in sandbox_get_context", "--version"),
        ),
        asyncio.gather(_cdp(settings.cdp_url), _upstreams(settings, doctor.gateway_url), _sandboxd(settings)),
    )
    checks = [_user(doctor), *executables, *_filesystem_checks(settings), cdp, *upstreams, *sandboxd]
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
