"""``aiod doctor`` (issue 20): a table of what the gateway needs and can use, exit status 1 exactly
when a required part (bash, python3, a writable home) is missing; optional parts only warn."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.gateway.upstreams.test_aggregation_fakes import tool, upstream_app
from tests.support.servers import serve_app


def doctor(
    path: Path, home: Path, *args: str, cdp_url: str = "http://127.0.0.1:9", **variables: str
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": str(path),
        "HOME": str(home),
        "AIO_CDP_URL": cdp_url,
        "AIO_GATEWAY_URL": "http://127.0.0.1:9",  # no gateway running unless a test starts one
        "LANG": "C.UTF-8",
        **variables,
    }
    return subprocess.run(
        [sys.executable, "-m", "agentbox_gateway.cli", "doctor", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def bin_with(tmp_path: Path, *names: str) -> Path:
    """A PATH directory holding only ``names`` (links to the machine's executables)."""
    directory = tmp_path / "bin"
    directory.mkdir(exist_ok=True)
    for name in names:
        found = shutil.which(name)
        assert found, f"{name} is needed on this machine for the test"
        (directory / name).symlink_to(found)
    return directory


def checks(result: subprocess.CompletedProcess[str]) -> dict[str, dict]:
    return {check["name"]: check for check in json.loads(result.stdout)}


def test_required_parts_present(tmp_path: Path) -> None:
    result = doctor(bin_with(tmp_path, "bash", "python3"), tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["check", "status", "detail"]
    rows = {line.split()[0]: line.split()[1] for line in lines[1:]}
    assert rows["bash"] == rows["python3"] == rows["home"] == "ok"
    assert rows["node"] == "warn" and rows["chromium"] == "warn"  # optional: absent here, still exit 0


def test_missing_bash_fails(tmp_path: Path) -> None:
    result = doctor(bin_with(tmp_path, "python3"), tmp_path, "--json")
    assert result.returncode == 1
    found = checks(result)
    assert found["bash"] == {
        "name": "bash",
        "required": True,
        "ok": False,
        "detail": "not on PATH (sandbox_execute_bash and /v1/shell)",
    }
    assert found["python3"]["ok"] is True


def test_unwritable_home_fails(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o500)
    try:
        if os.access(home, os.W_OK):  # root ignores mode bits: make the home a file's child instead
            home = tmp_path / "file" / "home"
            (tmp_path / "file").write_text("")
        result = doctor(bin_with(tmp_path, "bash", "python3"), home, "--json")
    finally:
        (tmp_path / "home").chmod(0o700)
    assert result.returncode == 1
    assert checks(result)["home"]["ok"] is False


def test_upstreams_are_probed(tmp_path: Path) -> None:
    with serve_app(upstream_app("up", [tool("a"), tool("b")])) as upstream:
        servers = {
            "up": {"url": f"{upstream}/mcp", "prefix": "up"},
            "gone": {"url": "http://127.0.0.1:9/mcp", "prefix": "gone"},
        }
        result = doctor(bin_with(tmp_path, "bash", "python3"), tmp_path, "--json", "--mcp-servers", json.dumps(servers))
    assert result.returncode == 0, result.stdout + result.stderr  # an upstream down is a warning
    found = checks(result)
    assert found["upstream:up"]["ok"] is True and found["upstream:up"]["detail"].endswith("2 tools")
    assert found["upstream:gone"]["ok"] is False and found["upstream:gone"]["required"] is False


SECRET = "doctor-secret-777"


def fake_cdp() -> Starlette:
    async def version(request: Request) -> JSONResponse:
        return JSONResponse({"Browser": "FakeChrome/1.0"})

    return Starlette(routes=[Route("/{prefix:path}/json/version", version), Route("/json/version", version)])


def test_credentials_in_printed_urls_are_redacted(tmp_path: Path) -> None:
    """Issue 26 item 12: ``AIO_CDP_URL`` (and an upstream's URL) are printed without a password or a
    credential parameter, whether the check passes or fails, in the table and in JSON."""
    path = bin_with(tmp_path, "bash", "python3")
    servers = {"gone": {"url": f"http://127.0.0.1:9/mcp?api%5Fkey={SECRET}", "prefix": "gone"}}
    with serve_app(fake_cdp()) as cdp:
        authority = cdp.removeprefix("http://")
        for cdp_url in (
            f"http://user:{SECRET}@{authority}",
            f"http://{authority}/devtools?token={SECRET}",
            f"http://{authority}/x?%74oken={SECRET}&a=1",
            f"http://user:{SECRET}@127.0.0.1:9",
        ):
            for args in ((), ("--json",)):
                result = doctor(path, tmp_path, *args, "--mcp-servers", json.dumps(servers), cdp_url=cdp_url)
                assert result.returncode == 0, result.stdout + result.stderr
                assert SECRET not in result.stdout + result.stderr, result.stdout
                assert result.stdout.count("[redacted len=17 sha256=") == 2
            if cdp_url.startswith(f"http://user:{SECRET}@{authority}"):
                assert checks(result)["chromium"]["ok"] is True  # the URL probed is the real one


def slow_executable(directory: Path, name: str, seconds: float, version: str) -> Path:
    """``name`` answering ``version`` after ``seconds``; it writes when it started to the file returned."""
    script, started = directory / name, directory.parent / f"{name}.started"
    script.write_text(f"#!/bin/sh\n/bin/date +%s.%N >{started}\n/bin/sleep {seconds}\necho {version}\n")
    script.chmod(0o755)
    return started


def test_slow_probes_get_their_time_at_once(tmp_path: Path) -> None:
    """Issue 28 item 7: ``npm --version`` takes over 3 s on a busy machine; each probe gets the
    time it needs, and the probes run at once (two 4 s probes: about 4 s, not 8)."""
    path = bin_with(tmp_path, "bash", "python3")
    npm = slow_executable(path, "npm", 4, "10.9.9")
    node = slow_executable(path, "node", 4, "v22.0.0")
    result = doctor(path, tmp_path, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    found = checks(result)
    assert found["npm"]["ok"] and found["npm"]["detail"].endswith(": 10.9.9"), found["npm"]
    assert found["node"]["detail"].endswith(": v22.0.0"), found["node"]
    assert abs(float(npm.read_text()) - float(node.read_text())) < 2  # side by side, not one after the other


def test_upstreams_come_from_the_running_gateway(tmp_path: Path, gateway_settings: GatewaySettings) -> None:
    """Issue 28 item 7: in the image the upstreams are registered by the entrypoint for the gateway
    alone (``docker compose exec`` does not see them): doctor asks the running gateway, behind its
    key, and lists every upstream with its tool count."""
    with serve_app(upstream_app("up", [tool("a"), tool("b")])) as upstream:
        servers = {
            "up": {"url": f"{upstream}/mcp", "prefix": "up"},
            "gone": {"url": "http://127.0.0.1:9/mcp", "prefix": "gone"},
        }
        settings = replace(gateway_settings, mcp_servers=servers, api_key="doctor-key-1", upstream_list_timeout=1.0)
        with serve_app(build_app(settings)) as gateway:
            path = bin_with(tmp_path, "bash", "python3")
            result = doctor(path, tmp_path, "--json", AIO_GATEWAY_URL=gateway, AIO_API_KEY="doctor-key-1")
            keyless = doctor(path, tmp_path, "--json", AIO_GATEWAY_URL=gateway)
    assert result.returncode == 0, result.stdout + result.stderr
    found = checks(result)
    assert found["gateway"]["ok"] is True and found["gateway"]["detail"].startswith(gateway), found["gateway"]
    assert found["upstream:up"]["ok"] is True, found["upstream:up"]
    assert found["upstream:up"]["detail"] == f"via {gateway}: 2 tools"
    assert found["upstream:gone"]["ok"] is False and found["upstream:gone"]["required"] is False
    refused = checks(keyless)
    assert refused["gateway"]["ok"] is False and "AIO_API_KEY" in refused["gateway"]["detail"], refused["gateway"]
    assert "doctor-key-1" not in result.stdout + keyless.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, as `docker compose exec` runs")
def test_root_checks_as_the_sandbox_user(tmp_path: Path) -> None:
    """Issue 28 item 7: run as root (``docker compose exec agentbox aiod doctor``), doctor checks as
    the image's sandbox user (``AGENTBOX_USER``): its home and its skills folder, not root's."""
    account = pwd.getpwnam("nobody")
    path = bin_with(tmp_path, "bash", "python3")
    result = doctor(path, tmp_path, "--json", AGENTBOX_USER="nobody")
    found = checks(result)
    assert found["user"] == {
        "name": "user",
        "required": False,
        "ok": True,
        "detail": f"checked as nobody (HOME {account.pw_dir})",
    }
    assert found["home"]["detail"].startswith(f"{account.pw_dir}"), found["home"]
    assert found["skills"]["detail"].startswith(f"{account.pw_dir}/skills"), found["skills"]
    unknown = checks(doctor(path, tmp_path, "--json", AGENTBOX_USER="no-such-user"))
    assert unknown["user"]["ok"] is False and "no-such-user" in unknown["user"]["detail"]
