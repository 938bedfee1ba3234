"""The image's gateway on 8091, reached through its 127.0.0.1 published port: health, the seed's
four-step workflow, the tool list (built-ins, then the browser program's page tools), the browser on a
page served inside the container, who sandbox commands run as and what they can see."""

from __future__ import annotations

import base64
import json
import time

import httpx
import pytest

from tests.support.builtin_tools import BUILTIN_TOOLS
from tests.support.jsonrpc import call_tool, rpc, tool_json, tool_text
from tests.support.png import decode_png

from .conftest import API_KEY, MCP_TOKEN
from .dockerbox import Box, start_in_box, write_in_box

pytestmark = pytest.mark.docker

PAGE = (
    "<!doctype html><html><head><meta charset=utf-8><title>agentbox e2e</title></head>"
    "<body style='font-size:40px'><h1 id=greeting>Hello from the container</h1>"
    "<p>Latin ok, 中文 日本語 한국어, emoji 😀🚀</p></body></html>"
)


def mcp(box: Box) -> str:
    return box.url(8091, "/mcp")


def wait_for_tools(box: Box, auth: dict[str, str], wanted: str, timeout: float = 60) -> list[str]:
    """tools/list until ``wanted`` shows up (the browser program may still be starting Chromium)."""
    deadline = time.monotonic() + timeout
    names: list[str] = []
    while time.monotonic() < deadline:
        response = rpc(mcp(box), "tools/list", headers=auth, timeout=30)
        assert response.status_code == 200, response.text
        names = [tool["name"] for tool in response.json()["result"]["tools"]]
        if wanted in names:
            return names
        time.sleep(0.5)
    raise AssertionError(f"{wanted} never appeared in tools/list: {names}\n{box.logs()}")


def test_health_is_public_and_mcp_needs_the_key(box: Box) -> None:
    health = httpx.get(box.url(8091, "/health"), timeout=10)
    assert health.status_code == 200
    assert health.json()["status"] == "ok"
    refused = rpc(mcp(box), "tools/list")
    assert refused.status_code == 401
    wrong = rpc(mcp(box), "tools/list", headers={"Authorization": "Bearer not-the-key"})
    assert wrong.status_code == 401


def test_docker_reports_the_container_healthy(box: Box) -> None:
    deadline = time.monotonic() + 60
    status = None
    while time.monotonic() < deadline:
        box.container.reload()
        status = box.container.attrs["State"].get("Health", {}).get("Status")
        if status == "healthy":
            return
        time.sleep(1)
    raise AssertionError(f"HEALTHCHECK status is {status!r}")


def test_seed_four_step_workflow(box: Box, auth: dict[str, str]) -> None:
    url = mcp(box)
    step1 = call_tool(
        url,
        "sandbox_file_operations",
        {"action": "write", "path": "/tmp/agent-data.txt", "content": "3\n7\n12\n5\n"},
        headers=auth,
    )
    assert step1["isError"] is False
    assert tool_text(step1) == '{"action":"write","bytes_written":9,"path":"/tmp/agent-data.txt","success":true}'

    step2 = call_tool(url, "sandbox_execute_bash", {"cmd": "wc -l /tmp/agent-data.txt", "cwd": "/tmp"}, headers=auth)
    assert step2["isError"] is False
    shell = tool_json(step2)
    assert shell["exit_code"] == 0 and shell["output"].strip() == "4 /tmp/agent-data.txt"
    assert shell["cwd"] == "/tmp"

    code = (
        'nums = [int(n) for n in open("/tmp/agent-data.txt").read().split()]\n'
        'open("/tmp/agent-result.txt", "w").write(str(sum(nums)))\nprint("sum written")'
    )
    step3 = call_tool(url, "sandbox_execute_code", {"language": "python", "code": code}, headers=auth)
    assert step3["isError"] is False
    assert tool_text(step3).strip() == "sum written"

    step4 = call_tool(url, "sandbox_file_operations", {"action": "read", "path": "/tmp/agent-result.txt"}, headers=auth)
    assert step4["isError"] is False
    assert tool_json(step4)["content"] == "27"


def test_failures_keep_their_two_shapes(box: Box, auth: dict[str, str]) -> None:
    unknown = rpc(mcp(box), "tools/call", {"name": "sandbox_execute", "arguments": {}}, headers=auth)
    assert unknown.status_code == 200
    assert unknown.json()["error"] == {"code": -32602, "message": "unknown tool: sandbox_execute"}
    missing_file = call_tool(
        mcp(box), "sandbox_file_operations", {"action": "read", "path": "/tmp/agent-missing.txt"}, headers=auth
    )
    assert missing_file["isError"] is True
    assert tool_json(missing_file)["error"]["error_type"] == "not_found"


def test_tools_list_is_builtins_then_browser_page_tools(box: Box, auth: dict[str, str]) -> None:
    names = wait_for_tools(box, auth, "browser_navigate")
    assert names[: len(BUILTIN_TOOLS)] == BUILTIN_TOOLS
    extra = names[len(BUILTIN_TOOLS) :]
    assert {"browser_navigate", "browser_screenshot", "browser_get_markdown"} <= set(extra)
    assert all(name.startswith("browser_") for name in extra), extra


def test_browser_navigates_to_a_page_served_inside_the_container(box: Box, auth: dict[str, str]) -> None:
    url = mcp(box)
    wait_for_tools(box, auth, "browser_navigate")
    write_in_box(box, auth, "/tmp/site/index.html", PAGE)
    start_in_box(
        box,
        auth,
        "python3 -m http.server 8765 --bind 127.0.0.1 --directory /tmp/site >/tmp/site.log 2>&1",
        "http://127.0.0.1:8765/",
    )

    navigate = call_tool(url, "browser_navigate", {"url": "http://127.0.0.1:8765/"}, headers=auth)
    assert navigate["isError"] is False, tool_text(navigate)
    text = call_tool(url, "browser_get_text", {}, headers=auth)
    assert "Hello from the container" in tool_text(text)

    shot = call_tool(url, "browser_gui_screenshot", {}, headers=auth)
    assert shot["isError"] is False, shot
    images = [item for item in shot["content"] if item["type"] == "image"]
    assert images, shot
    png = decode_png(base64.b64decode(images[0]["data"]))
    dark = sum(1 for y in range(0, png.height, 4) for x in range(0, png.width, 4) if sum(png.pixel(x, y)[:3]) < 200)
    assert dark > 50, "the screenshot shows no text"

    info = tool_json(call_tool(url, "browser_get_info", {}, headers=auth))
    assert info["cdp_url"]


def test_sandbox_commands_run_as_the_non_root_user_without_secrets(box: Box, auth: dict[str, str]) -> None:
    result = call_tool(
        mcp(box),
        "sandbox_execute_bash",
        {"cmd": "id -un; id -u; echo HOME=$HOME; env", "new_session": True},
        headers=auth,
    )
    output = tool_json(result)["output"]
    lines = output.splitlines()
    assert lines[0] == "sandbox" and lines[1] == "1000", output
    assert "HOME=/home/sandbox" in output
    for secret in ("AIO_API_KEY", "AICODEBOX_MCP_MODE_TOKEN", API_KEY):
        assert secret not in output

    code = call_tool(
        mcp(box),
        "sandbox_execute_code",
        {
            "language": "python",
            "code": (
                "import os\nprint(os.getuid(), 'AIO_API_KEY' in os.environ, 'AICODEBOX_MCP_MODE_TOKEN' in os.environ)"
            ),
        },
        headers=auth,
    )
    assert tool_text(code).split() == ["1000", "False", "False"]
    js = call_tool(
        mcp(box),
        "sandbox_execute_code",
        {"language": "javascript", "code": ("console.log(process.getuid(), 'AIO_API_KEY' in process.env)")},
        headers=auth,
    )
    assert tool_text(js).split() == ["1000", "false"]


def test_sandbox_commands_cannot_read_secrets_from_other_processes(box: Box, auth: dict[str, str]) -> None:
    """Neither tini/supervisord (root) nor the programs (non-dumpable) leak the key or the MCP token through
    /proc/<pid>/environ; an ordinary process of the same user (the probe's control) can be read."""
    probe = call_tool(
        mcp(box),
        "sandbox_execute_bash",
        {
            "cmd": (
                "(AGENTBOX_PROBE=control-marker-5e1 sleep 5 &) ; sleep 0.3; "
                "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>/dev/null "
                f"| grep -e {API_KEY} -e {MCP_TOKEN} -e control-marker-5e1 | sort -u"
            )
        },
        headers=auth,
    )
    assert tool_json(probe)["output"].split() == ["AGENTBOX_PROBE=control-marker-5e1"], tool_text(probe)


def test_workspace_is_owned_by_the_sandbox_user(box: Box, auth: dict[str, str]) -> None:
    result = call_tool(
        mcp(box),
        "sandbox_execute_bash",
        {"cmd": "stat -c %U /workspace && touch /workspace/owned && echo wrote"},
        headers=auth,
    )
    assert tool_json(result)["output"].split() == ["sandbox", "wrote"]


def test_no_zombies_after_commands_that_background_children(box: Box, auth: dict[str, str]) -> None:
    url = mcp(box)
    forms = [
        "sleep 0.3 & echo {i}",
        "(sleep 0.3 &) ; echo {i}",
        "setsid sleep 0.3 & echo {i}",
        "bash -c 'sleep 0.3 &' ; echo {i}",
    ]
    for i in range(50):
        result = call_tool(url, "sandbox_execute_bash", {"cmd": forms[i % len(forms)].format(i=i)}, headers=auth)
        assert result["isError"] is False, tool_text(result)
    deadline = time.monotonic() + 15
    zombies = ""
    while time.monotonic() < deadline:
        _, zombies = box.exec("ps -eo stat=,pid=,ppid=,comm= | awk '$1 ~ /^Z/'")
        _, sleepers = box.exec("pgrep -c -x sleep || true")
        if not zombies.strip() and sleepers.strip() == "0":
            return
        time.sleep(0.5)
    raise AssertionError(f"zombie processes remain:\n{zombies}")


def test_pid_1_is_tini_and_programs_run_as_sandbox(box: Box) -> None:
    _, comm = box.exec("cat /proc/1/comm")
    assert comm.strip() == "tini"
    _, users = box.exec("ps -o user= -p $(supervisorctl pid gateway),$(supervisorctl pid browser)")
    assert users.split() == ["sandbox", "sandbox"]
    _, supervisor = box.exec("ps -o user= -C supervisord")
    assert supervisor.split() == ["root"]


def test_rest_context_matches_the_image(box: Box, auth: dict[str, str]) -> None:
    response = httpx.get(box.url(8091, "/v1/sandbox"), headers=auth, timeout=30)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["success"] is True
    text = json.dumps(body["data"])
    assert "sandbox" in text
