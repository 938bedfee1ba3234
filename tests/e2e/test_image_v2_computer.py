"""The image's ``/v2/computer``: a page with a form opened in Chromium on the image's display; its
accessibility tree (the image's session D-Bus and at-spi2-core, Chromium exposing its tree) lists the
field and the button with names and bounds; setting the field's value and invoking the button by node
submit the form (read back on the page); a batch of ten actions is not interleaved with another
client's action; the clipboard round-trips; the window list shows Chromium; the MCP tools act by node;
and with ``DISABLE_VNC=true`` the routes answer 503 with a hint."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import docker
import httpx
import pytest

from tests.support.jsonrpc import call_tool, tool_json, tool_text
from tests.support.polling import until

from .dockerbox import Box, running_box, start_in_box, write_in_box
from .test_image_gateway import wait_for_tools

pytestmark = pytest.mark.docker
KEY = "computer-e2e-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
FORM = (
    '<!doctype html><title>start</title><form onsubmit="event.preventDefault();'
    "document.title='sent:'+who.value\"><label for=who>Your name</label>"
    "<input id=who oninput=\"document.title='typed:'+who.value\"><button type=submit>Send it</button></form>"
)


def data(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["success"] is True, body
    return body["data"]


@pytest.fixture(scope="module")
def computer_box(docker_client: docker.DockerClient, agentbox_image: str) -> Iterator[Box]:
    with running_box(docker_client, agentbox_image, {"AIO_API_KEY": KEY}) as box:
        wait_for_tools(box, AUTH, "browser_navigate", timeout=90)
        write_in_box(box, AUTH, "/tmp/form/index.html", FORM)
        page = "http://127.0.0.1:8767/"
        start_in_box(
            box, AUTH, "python3 -m http.server 8767 --bind 127.0.0.1 --directory /tmp/form >/dev/null 2>&1", page
        )
        navigate = call_tool(box.url(8091, "/mcp"), "browser_navigate", {"url": page}, headers=AUTH)
        assert navigate["isError"] is False, tool_text(navigate)
        yield box


@pytest.fixture(scope="module")
def client(computer_box: Box) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=computer_box.url(8091), headers=AUTH, timeout=60) as http:
        yield http


def title(box: Box) -> str:
    result = call_tool(box.url(8091, "/mcp"), "browser_evaluate", {"script": "() => document.title"}, headers=AUTH)
    return tool_text(result)


def node(client: httpx.Client, **query: str) -> dict[str, Any]:
    def search() -> list[dict[str, Any]]:
        return list(data(client.get("/v2/computer/accessibility/nodes", params=query))["nodes"])

    found = until(search, 30)
    assert len(found) == 1, found
    return dict(found[0])


def test_info_and_screenshot(client: httpx.Client) -> None:
    info = data(client.get("/v2/computer/info"))
    assert info["available"] is True and info["display"] == ":99" and all(info["capabilities"].values()), info
    assert info["screen_resolution"] == {"width": 1280, "height": 1024}
    shot = client.get("/v2/computer/screenshot")
    assert shot.status_code == 200 and shot.content.startswith(b"\x89PNG")
    assert (shot.headers["x-image-width"], shot.headers["x-screen-height"]) == ("1280", "1024")


def test_the_tree_lists_the_form_and_node_actions_submit_it(client: httpx.Client, computer_box: Box) -> None:
    field = node(client, role="entry", name="Your name", match="exact")
    button = node(client, role="push button", name="Send it", match="exact")
    for found in (field, button):
        assert found["bounds"]["width"] > 0 and found["bounds"]["height"] > 0, found
        assert found["bounds"]["y"] > 60, "below the browser's own toolbars"
    tree = data(client.get("/v2/computer/accessibility", params={"name": "Send it"}))
    assert tree["node_count"] >= 1 and tree["truncated"] is False
    data(
        client.post(
            "/v2/computer/actions", json={"action_type": "NODE_SET_VALUE", "node_id": field["node_id"], "value": "Ada"}
        )
    )
    data(client.post("/v2/computer/actions", json={"action_type": "NODE_INVOKE", "node_id": button["node_id"]}))
    until(lambda: "sent:Ada" in title(computer_box), 30)


def test_a_batch_of_ten_is_not_interleaved(client: httpx.Client, computer_box: Box) -> None:
    field = node(client, role="entry", name="Your name", match="exact")
    reset = {"action_type": "NODE_SET_VALUE", "node_id": field["node_id"], "value": ""}
    data(
        client.post(
            "/v2/computer/actions/batch", json={"actions": [reset, {"action_type": "MOVE_TO", "x": 600, "y": 600}]}
        )
    )
    until(lambda: "typed:" in title(computer_box) and "typed:A" not in title(computer_box), 30)
    batch: list[dict[str, Any]] = [{"action_type": "MOVE_TO", "x": 7, "y": 7}]
    for pair in ("ab", "cd", "ef", "gh"):
        batch += [{"action_type": "TYPING", "text": pair}, {"action_type": "WAIT", "duration": 0.5}]
    batch.append({"action_type": "TYPING", "text": "ij"})
    outcome: dict[str, Any] = {}

    def other_client() -> None:
        with httpx.Client(base_url=client.base_url, headers=AUTH, timeout=60) as other:
            until(lambda: other.get("/v2/computer/cursor").json()["data"] == {"x": 7, "y": 7}, 60)
            outcome["typed"] = other.post("/v2/computer/actions", json={"action_type": "TYPING", "text": "X"})

    data(client.post("/v2/computer/actions", json={"action_type": "NODE_FOCUS", "node_id": field["node_id"]}))
    thread = threading.Thread(target=other_client)
    thread.start()
    result = data(client.post("/v2/computer/actions/batch", json={"actions": batch}))
    thread.join(90)
    assert len(result["performed"]) == 10 and result["failed_index"] is None
    assert data(outcome["typed"])
    until(lambda: "typed:abcdefghijX" in title(computer_box), 30)


def test_clipboard_and_windows(client: httpx.Client) -> None:
    text = "héllo — 中文 ✓"
    data(client.post("/v2/computer/clipboard", json={"text": text}))
    assert data(client.get("/v2/computer/clipboard"))["text"] == text
    windows = data(client.get("/v2/computer/windows"))["windows"]
    assert any("Chromium" in w["title"] and w["bounds"]["width"] > 0 for w in windows), windows


def test_mcp_tools_find_and_act_by_node(computer_box: Box) -> None:
    mcp = computer_box.url(8091, "/mcp")
    nodes = tool_json(
        call_tool(mcp, "computer_accessibility_nodes", {"role": "push button", "name": "Send it"}, headers=AUTH)
    )
    assert len(nodes["nodes"]) == 1
    invoke = {"action_type": "NODE_INVOKE", "node_id": nodes["nodes"][0]["node_id"]}
    result = call_tool(mcp, "computer_execute_actions", {"actions": [invoke], "include_screenshot": True}, headers=AUTH)
    assert result["isError"] is False and result["content"][1]["type"] == "image", result


def test_record_grabs_the_whole_display_one_at_a_time(client: httpx.Client, computer_box: Box) -> None:
    path = "/tmp/recordings/desktop.mp4"
    started = data(client.post("/v2/computer/record", json={"action": "start", "save_path": path, "fps": 10}))
    assert started["status"] == "recording" and started["save_path"] == path
    second = client.post("/v2/computer/record", json={"action": "start"})
    assert second.status_code == 409, second.text
    assert client.post("/v2/computer/record", json={"action": "start", "max_duration": 601}).status_code == 422
    until(lambda: data(client.post("/v2/computer/record", json={"action": "status"}))["duration"] >= 1.5, 30)
    stopped = data(client.post("/v2/computer/record", json={"action": "stop"}))
    assert stopped["status"] == "stopped" and stopped["file_size_bytes"] > 0, stopped
    code, probed = computer_box.exec(
        f"ffprobe -v error -select_streams v:0 -show_entries stream=width,height -of csv=p=0 {path}", user="sandbox"
    )
    assert code == 0 and probed.strip() == "1280,1024", probed  # the screen, not the page under the toolbars


def test_without_the_display_the_routes_answer_503(docker_client: docker.DockerClient, agentbox_image: str) -> None:
    with running_box(docker_client, agentbox_image, {"AIO_API_KEY": KEY, "DISABLE_VNC": "true"}) as box:
        box.wait_http(8091, "/health")
        with httpx.Client(base_url=box.url(8091), headers=AUTH, timeout=60) as http:
            assert data(http.get("/v2/computer/info"))["available"] is False
            for path in ("/v2/computer/screenshot", "/v2/computer/accessibility/nodes", "/v2/computer/windows"):
                response = http.get(path)
                assert response.status_code == 503 and "DISABLE_VNC" in response.json()["hint"], response.text
