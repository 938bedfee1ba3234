"""``aiod doctor`` (issue 20): a table of what the gateway needs and can use, exit status 1 exactly
when a required part (bash, python3, a writable home) is missing; optional parts only warn."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.support.servers import serve_app

from .test_aggregation_fakes import tool, upstream_app


def doctor(path: Path, home: Path, *args: str, cdp_url: str = "http://127.0.0.1:9") -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(path), "HOME": str(home), "AIO_CDP_URL": cdp_url, "LANG": "C.UTF-8"}
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
