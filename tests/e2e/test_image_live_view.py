"""The image's display stack: Chromium headful on Xvfb, x11vnc on loopback, the live view through
the gateway (``vnc_url`` opens noVNC, whose canvas shows the page the agent navigated to), the
dashboard from the image, supervisord restarting the display while the gateway answers, and
``DISABLE_VNC=true`` turning it all off."""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterator

import docker
import httpx
import pytest

from agentbox_gateway.doors.mcp.apps import LIVE_VIEW_URI
from tests.support.browser_pages import browser_context
from tests.support.jsonrpc import call_tool, tool_json, tool_text
from tests.support.mcp_app_host import host_page, host_server, mount, open_view, wait_for
from tests.support.png import decode_png

from .dockerbox import Box, running_box, start_in_box, write_in_box
from .test_image_gateway import wait_for_tools

pytestmark = pytest.mark.docker
KEY = "live-view-e2e-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
GREEN = [0, 200, 80]
PAGE = "<!doctype html><title>green</title><body style='margin:0;background:rgb(0,200,80)'>"
MAGENTA = (255, 0, 170)
BUTTON_PAGE = (
    "<!doctype html><title>button</title><body style='margin:0;background:#fff'>"
    "<button id=b style='position:absolute;left:300px;top:200px;width:240px;height:120px;border:0;"
    "background:rgb(255,0,170)' onclick=\"document.title='pressed';this.textContent='pressed'\"></button>"
)


@pytest.fixture(scope="module")
def live_box(docker_client: docker.DockerClient, agentbox_image: str) -> Iterator[Box]:
    with running_box(docker_client, agentbox_image, {"AIO_API_KEY": KEY}) as box:
        wait_for_tools(box, AUTH, "browser_navigate", timeout=90)
        yield box


def serve_page(box: Box) -> str:
    for name, content in (("index.html", PAGE), ("button.html", BUTTON_PAGE)):
        write_in_box(box, AUTH, f"/tmp/green/{name}", content)
    page = "http://127.0.0.1:8766/"
    start_in_box(box, AUTH, "python3 -m http.server 8766 --bind 127.0.0.1 --directory /tmp/green >/dev/null 2>&1", page)
    return page


def test_the_live_view_shows_the_page_the_agent_navigated_to(live_box: Box) -> None:
    url = live_box.url(8091, "/mcp")
    navigate = call_tool(url, "browser_navigate", {"url": serve_page(live_box)}, headers=AUTH)
    assert navigate["isError"] is False, tool_text(navigate)
    info = tool_json(call_tool(url, "browser_get_info", {}, headers=AUTH))
    assert info["vnc_url"].startswith(live_box.url(8091, "/vnc/index.html?autoconnect=true"))
    assert "ticket=" in info["vnc_url"] and KEY not in info["vnc_url"]
    with browser_context(live_box.url(8091)) as (context, recorder):
        page = context.new_page()
        page.goto(info["vnc_url"])
        deadline = time.monotonic() + 30
        size: list[int] = []
        pixel: list[int] = []
        while time.monotonic() < deadline:
            size, pixel = page.evaluate("""() => {
                const canvas = document.querySelector('#noVNC_container canvas');
                if (!canvas || !canvas.width) return [[], []];
                const data = canvas.getContext('2d').getImageData(canvas.width / 2, canvas.height * 0.8, 1, 1).data;
                return [[canvas.width, canvas.height], Array.from(data)];
            }""")
            if pixel[:3] == GREEN:
                break
            time.sleep(0.3)
        assert size == [1280, 1024] and pixel[:3] == GREEN, (size, pixel)
        assert recorder.foreign == []


def test_the_live_view_renders_as_an_mcp_app(live_box: Box) -> None:
    """What a host that renders MCP Apps (VS Code, ChatGPT, Claude) does with ``browser_get_info``: its
    ``ui://`` view, in a sandboxed frame of the host's own origin, shows the browser's display through
    the image's noVNC, loading nothing but from the gateway and never carrying the key."""
    url = live_box.url(8091, "/mcp")
    navigate = call_tool(url, "browser_navigate", {"url": serve_page(live_box)}, headers=AUTH)
    assert navigate["isError"] is False, tool_text(navigate)
    gateway = live_box.url(8091, "")
    html, ui, result = open_view(gateway, KEY, LIVE_VIEW_URI, "browser_get_info")
    with host_server() as host, host_page(host, gateway) as (page, requests):
        frame = mount(page, html, ui, result)

        def pixel() -> list[int]:
            return frame.evaluate("""() => {
                const canvas = document.querySelector('#screen canvas');
                if (!canvas || !canvas.width) return [];
                const ctx = canvas.getContext('2d');
                return Array.from(ctx.getImageData(canvas.width / 2, canvas.height * 0.8, 1, 1).data);
            }""")

        wait_for(lambda: pixel()[:3] == GREEN, "the view's canvas shows the page", timeout=30)
        view = [request for request in requests if not request.startswith((host, "about:", "data:"))]
        assert view and all(request.startswith((gateway, gateway.replace("http", "ws", 1))) for request in view)
        assert all(KEY not in request for request in requests)


def test_gui_tools_act_on_the_display(live_box: Box) -> None:
    """The screenshot is the whole display (browser window included), and a click at the button's
    on-screen coordinates, found in that screenshot, presses it."""
    url = live_box.url(8091, "/mcp")
    navigate = call_tool(url, "browser_navigate", {"url": serve_page(live_box) + "button.html"}, headers=AUTH)
    assert navigate["isError"] is False, tool_text(navigate)
    time.sleep(0.5)
    shot = call_tool(url, "browser_gui_screenshot", {}, headers=AUTH)
    [image] = [item for item in shot["content"] if item["type"] == "image"]
    png = decode_png(base64.b64decode(image["data"]))
    assert (png.width, png.height) == (1280, 1024)
    found = [(x, y) for y in range(0, png.height, 4) for x in range(0, png.width, 4) if png.pixel(x, y)[:3] == MAGENTA]
    assert found, "the button is not on the display"
    x = sum(p[0] for p in found) / len(found)
    y = sum(p[1] for p in found) / len(found)
    assert y > 200 + 30, "the page is below the browser's own toolbars on a headful display"
    action = {"action_type": "CLICK", "x": x, "y": y}
    clicked = call_tool(url, "browser_gui_execute_action", {"action": action}, headers=AUTH)
    assert clicked["isError"] is False, tool_text(clicked)
    deadline = time.monotonic() + 10
    while "pressed" not in tool_text(call_tool(url, "browser_get_text", {}, headers=AUTH)):
        assert time.monotonic() < deadline, "the click did not press the button"
        time.sleep(0.3)


def test_the_dashboard_comes_from_the_image(live_box: Box) -> None:
    page = httpx.get(live_box.url(8091, "/"), headers=AUTH)
    assert page.status_code == 200 and "static/dashboard.js" in page.text
    assert httpx.get(live_box.url(8091, "/static/vendor/xterm/xterm.js"), headers=AUTH).status_code == 200
    assert httpx.get(live_box.url(8091, "/vnc/app/ui.js"), headers=AUTH).status_code == 200
    assert httpx.get(live_box.url(8091, "/vnc/app/ui.js")).status_code == 401


def test_a_fresh_display_shows_and_logs_no_rough_edges(live_box: Box) -> None:
    """Issue 28 item 11: Chromium draws no "unsupported command-line flag" bar over the page (on the
    screen, the page starts under about 90 px of tabs and toolbar, not 145), the log has no Xvfb
    socket-directory error nor x11vnc's DPMS line, and noVNC's ``package.json`` is there with the
    image's noVNC version."""
    url = live_box.url(8091, "/mcp")
    navigate = call_tool(url, "browser_navigate", {"url": serve_page(live_box)}, headers=AUTH)
    assert navigate["isError"] is False, tool_text(navigate)
    time.sleep(1.5)  # the bar comes in after the first paint
    shot = call_tool(url, "browser_gui_screenshot", {}, headers=AUTH)
    [image] = [item for item in shot["content"] if item["type"] == "image"]
    png = decode_png(base64.b64decode(image["data"]))
    top = next((y for y in range(png.height) if png.pixel(png.width // 2, y)[:3] == tuple(GREEN)), None)
    assert top is not None and top <= 115, f"the page starts {top} px down the screen: an infobar is above it"
    logs = live_box.container.logs().decode(errors="replace")
    assert "_XSERVTransmkdir" not in logs and 'extension "DPMS" missing' not in logs, logs[-3000:]
    package = httpx.get(live_box.url(8091, "/vnc/package.json"), headers=AUTH)
    assert package.status_code == 200 and re.fullmatch(r"\d+\.\d+\.\d+", package.json()["version"]), package.text


def test_doctor_run_as_root_checks_as_the_sandbox_user(live_box: Box) -> None:
    """Issue 28 item 7: ``docker compose exec agentbox aiod doctor`` runs as root; it checks as the
    sandbox user (its home, its skills), lists the running gateway's upstreams with their tools, and
    gives ``npm --version`` the time it takes."""
    code, output = live_box.exec("aiod doctor --json 2>/dev/null", user="root", timeout=120)
    assert code == 0, output
    found = {check["name"]: check for check in json.loads(output)}
    assert found["user"]["detail"] == "checked as sandbox (HOME /home/sandbox)", found["user"]
    assert found["home"] == {"name": "home", "required": True, "ok": True, "detail": "/home/sandbox is writable"}
    assert found["skills"]["ok"] and found["skills"]["detail"] == "/home/sandbox/skills exists", found["skills"]
    assert found["npm"]["ok"] and re.search(r": \d+\.\d+\.\d+$", found["npm"]["detail"]), found["npm"]
    assert found["gateway"]["ok"], found["gateway"]
    browser = found["upstream:browser"]
    tools = re.fullmatch(r"via http://127\.0\.0\.1:8091: (\d+) tools", browser["detail"])
    assert browser["ok"] and tools and int(tools[1]) >= 10, browser
    code, table = live_box.exec("aiod doctor 2>/dev/null", user="root", timeout=120)
    assert code == 0 and re.search(r"^upstream:browser +ok +via ", table, re.MULTILINE), table


def test_a_killed_display_comes_back_while_the_gateway_answers(live_box: Box) -> None:
    old = live_box.program_pid("display")
    code, output = live_box.exec(f"kill -KILL {old}")
    assert code == 0, output
    assert httpx.get(live_box.url(8091, "/health"), timeout=5).status_code == 200
    deadline = time.monotonic() + 60
    new = old
    while time.monotonic() < deadline:
        assert httpx.get(live_box.url(8091, "/health"), timeout=5).status_code == 200
        if live_box.program_states().get("display") == "RUNNING":
            new = live_box.program_pid("display")
            if new != old:
                break
        time.sleep(0.3)
    assert new != old, live_box.program_states()
    live_box.wait_state("vnc", "RUNNING")


def test_disable_vnc_turns_the_display_and_the_live_view_off(
    docker_client: docker.DockerClient, agentbox_image: str
) -> None:
    with running_box(docker_client, agentbox_image, {"AIO_API_KEY": KEY, "DISABLE_VNC": "true"}) as box:
        states = box.program_states()
        assert states.get("display") != "RUNNING" and states.get("vnc") != "RUNNING", states
        wait_for_tools(box, AUTH, "browser_navigate", timeout=90)
        info = httpx.get(box.url(8091, "/v1/browser/info"), headers=AUTH, timeout=30).json()["data"]
        assert info["vnc_url"] == ""
        assert httpx.get(box.url(8091, "/vnc/index.html"), headers=AUTH).status_code == 404
        code, output = box.exec("pgrep -a chromium | grep -c -- --headless=new")
        assert code == 0 and int(output.strip()) >= 1, output
