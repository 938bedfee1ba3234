"""``/v2/computer`` against a real desktop (Xvfb, a session D-Bus with AT-SPI2, Chromium exposing its
accessibility tree) through a real gateway on 127.0.0.1, driven with httpx as aiod's documentation
describes. What is checked on the page is read from Chromium's DevTools list (the page's title)."""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.gateway.conftest import isolated_settings
from tests.support.desktop import Desktop, accessible_desktop
from tests.support.jsonrpc import call_tool, tool_json, tool_text
from tests.support.polling import until
from tests.support.servers import serve_app

KEY = "computer-test-key"
BEARER = {"Authorization": f"Bearer {KEY}"}
#: The title follows the field as it is typed; the form's submit writes what it sent.
FORM = (
    '<!doctype html><title>start</title><form id=f onsubmit="event.preventDefault();'
    "document.title='sent:'+who.value\"><label for=who>Your name</label>"
    "<input id=who oninput=\"document.title='typed:'+who.value\"><button type=submit>Send it</button></form>"
)


def data(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["success"] is True, body
    return body["data"]


@pytest.fixture(scope="module")
def desktop() -> Iterator[Desktop]:
    with accessible_desktop("data:text/html," + urllib.parse.quote(FORM)) as found:
        yield found


@pytest.fixture(scope="module")
def client(desktop: Desktop, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    settings = replace(
        isolated_settings(tmp_path_factory.mktemp("skills")),
        api_key=KEY,
        cdp_url=desktop.cdp_url,
        vnc_enabled=True,
        display=desktop.display,
        session_bus=desktop.session_bus,
    )
    with serve_app(build_app(settings)) as url, httpx.Client(base_url=url, headers=BEARER, timeout=60) as http:
        yield http


def page_title(desktop: Desktop) -> str:
    pages = [t for t in httpx.get(f"{desktop.cdp_url}/json/list").json() if t["type"] == "page"]
    return str(pages[0]["title"])


def find(client: httpx.Client, **query: str) -> dict[str, Any]:
    """The one node matching ``query``, once the page's tree has it (Chromium builds it as it loads)."""

    def search() -> list[dict[str, Any]]:
        return list(data(client.get("/v2/computer/accessibility/nodes", params=query))["nodes"])

    found = until(search, 20)
    assert isinstance(found, list) and len(found) == 1, found
    return found[0]


def reset_field(client: httpx.Client, desktop: Desktop) -> dict[str, Any]:
    field = find(client, role="entry", name="Your name", match="exact")
    data(
        client.post(
            "/v2/computer/actions", json={"action_type": "NODE_SET_VALUE", "node_id": field["node_id"], "value": ""}
        )
    )
    until(lambda: page_title(desktop) in ("typed:", "start", "sent:"), 20)
    return field


def test_routes_need_the_key(client: httpx.Client) -> None:
    for path in ("/v2/computer/info", "/v2/computer/accessibility/nodes", "/v2/computer/clipboard"):
        assert httpx.get(f"{client.base_url}{path}").status_code == 401


def test_info_and_screenshot(client: httpx.Client, desktop: Desktop) -> None:
    info = data(client.get("/v2/computer/info"))
    assert info["available"] is True and info["display"] == desktop.display
    assert info["screen_resolution"] == {"width": 1280, "height": 800}
    assert all(info["capabilities"].values()), info
    shot = client.get("/v2/computer/screenshot")
    assert shot.status_code == 200 and shot.content.startswith(b"\x89PNG\r\n\x1a\n")
    assert shot.headers["content-type"] == "image/png"
    assert (shot.headers["x-image-width"], shot.headers["x-screen-height"]) == ("1280", "800")


def test_tree_lists_the_form_and_node_actions_submit_it(client: httpx.Client, desktop: Desktop) -> None:
    field = find(client, role="entry", name="Your name", match="exact")
    button = find(client, role="push button", name="send it")
    for node in (field, button):
        assert node["bounds"]["width"] > 0 and node["bounds"]["height"] > 0 and "showing" in node["states"]
    assert button["bounds"]["x"] > field["bounds"]["x"]
    tree = data(client.get("/v2/computer/accessibility", params={"role": "push button", "name": "Send it"}))
    assert tree["node_count"] == 1 and tree["roots"][0]["role"] == "application"
    again = data(client.get("/v2/computer/accessibility/nodes", params={"node_id": field["node_id"]}))["nodes"]
    assert again[0]["node_id"] == field["node_id"] and again[0]["name"] == "Your name"  # ids outlive a snapshot

    batch = data(
        client.post(
            "/v2/computer/actions/batch",
            json={
                "actions": [
                    {"action_type": "NODE_SET_VALUE", "node_id": field["node_id"], "value": "Ada Lovelace"},
                    {"action_type": "NODE_INVOKE", "node_id": button["node_id"]},
                ],
                "include_screenshot": True,
            },
        )
    )
    assert batch["failed_index"] is None and len(batch["performed"]) == 2 and batch["screenshot"]
    until(lambda: page_title(desktop) == "sent:Ada Lovelace", 20)


def test_a_batch_is_not_interleaved(client: httpx.Client, desktop: Desktop) -> None:
    """Ten actions with pauses in them; another client acts as soon as it sees the batch begin (the
    pointer moved by its first action): its text lands after all of the batch's, not between."""
    field = reset_field(client, desktop)
    data(client.post("/v2/computer/actions", json={"action_type": "MOVE_TO", "x": 300, "y": 300}))
    data(client.post("/v2/computer/actions", json={"action_type": "NODE_FOCUS", "node_id": field["node_id"]}))
    batch: list[dict[str, Any]] = [{"action_type": "MOVE_TO", "x": 7, "y": 7}]
    for pair in ("ab", "cd", "ef", "gh"):
        batch += [{"action_type": "TYPING", "text": pair}, {"action_type": "WAIT", "duration": 0.5}]
    batch.append({"action_type": "TYPING", "text": "ij"})
    assert len(batch) == 10
    outcome: dict[str, Any] = {}

    def other_client() -> None:
        with httpx.Client(base_url=client.base_url, headers=BEARER, timeout=60) as other:
            until(lambda: other.get("/v2/computer/cursor").json()["data"] == {"x": 7, "y": 7}, 30)
            outcome["typed"] = other.post("/v2/computer/actions", json={"action_type": "TYPING", "text": "X"})

    thread = threading.Thread(target=other_client)
    thread.start()
    result = data(client.post("/v2/computer/actions/batch", json={"actions": batch}))
    thread.join(60)
    assert len(result["performed"]) == 10 and result["failed_index"] is None
    assert data(outcome["typed"])["action_performed"]
    until(lambda: page_title(desktop) == "typed:abcdefghijX", 20)


def test_a_failing_action_stops_the_batch(client: httpx.Client) -> None:
    response = client.post(
        "/v2/computer/actions/batch",
        json={
            "actions": [
                {"action_type": "MOVE_TO", "x": 5, "y": 5},
                {"action_type": "NODE_FOCUS", "node_id": ":1.999/org/a11y/atspi/accessible/1"},
                {"action_type": "MOVE_TO", "x": 50, "y": 50},
            ]
        },
    )
    body = response.json()
    assert response.status_code == 200 and body["success"] is False, body
    assert body["data"]["failed_index"] == 1 and body["data"]["performed"] == ["Moved the mouse to (5, 5)"]
    assert data(client.get("/v2/computer/cursor")) == {"x": 5, "y": 5}


def test_bad_input_changes_nothing(client: httpx.Client) -> None:
    before = data(client.get("/v2/computer/cursor"))
    too_many = [{"action_type": "MOVE_TO", "x": 1, "y": 1}] * 51
    assert client.post("/v2/computer/actions/batch", json={"actions": too_many}).status_code == 422
    waits = [{"action_type": "MOVE_TO", "x": 1, "y": 1}] + [{"action_type": "WAIT", "duration": 7}] * 3
    refused = client.post("/v2/computer/actions/batch", json={"actions": waits})
    assert refused.status_code == 400 and "20" in refused.json()["message"]
    bad = client.post(
        "/v2/computer/actions/batch",
        json={"actions": [{"action_type": "MOVE_TO", "x": 1, "y": 1}, {"action_type": "NOPE"}]},
    )
    assert bad.status_code == 400 and "actions[1]" in bad.json()["message"]
    assert (
        client.post("/v2/computer/actions", json={"action_type": "NODE_FOCUS", "node_id": "nonsense"}).status_code
        == 400
    )
    assert (
        client.get(
            "/v2/computer/accessibility/nodes", params={"node_id": ":1.999/org/a11y/atspi/accessible/1"}
        ).status_code
        == 404
    )
    assert client.get("/v2/computer/accessibility", params={"states": "shiny"}).status_code == 400
    assert client.post("/v2/computer/windows/1/activate").status_code == 404
    assert data(client.get("/v2/computer/cursor")) == before


def test_clipboard_round_trip(client: httpx.Client) -> None:
    text = "héllo, wörld — 中文 ✓\nsecond line"
    data(client.post("/v2/computer/clipboard", json={"text": text}))
    assert data(client.get("/v2/computer/clipboard"))["text"] == text
    data(client.post("/v2/computer/actions", json={"action_type": "SET_CLIPBOARD", "text": "by action"}))
    assert data(client.get("/v2/computer/clipboard"))["text"] == "by action"
    large = client.post("/v2/computer/clipboard", json={"text": "é" * (600 * 1024)})
    assert large.status_code == 413
    assert data(client.get("/v2/computer/clipboard"))["text"] == "by action"


def test_windows_list_and_activate(client: httpx.Client) -> None:
    listing = data(client.get("/v2/computer/windows"))
    chromium = [w for w in listing["windows"] if "Chromium" in w["title"]]
    assert chromium and chromium[0]["process_id"] and chromium[0]["bounds"]["width"] > 0, listing
    window_id = chromium[0]["window_id"]
    data(client.post("/v2/computer/actions", json={"action_type": "WINDOW_MINIMIZE", "window_id": window_id}))
    minimized = {w["window_id"]: w for w in data(client.get("/v2/computer/windows"))["windows"]}
    assert minimized[window_id]["minimized"] is True
    data(client.post(f"/v2/computer/windows/{window_id}/activate"))
    shown = {w["window_id"]: w for w in data(client.get("/v2/computer/windows"))["windows"]}
    assert shown[window_id]["minimized"] is False


def test_mcp_tools_act_by_node(client: httpx.Client, desktop: Desktop) -> None:
    mcp = f"{client.base_url}/mcp"
    found = tool_json(
        call_tool(mcp, "computer_accessibility_nodes", {"role": "entry", "name": "Your name"}, headers=BEARER)
    )
    button = tool_json(
        call_tool(mcp, "computer_accessibility_nodes", {"role": "push button", "name": "Send it"}, headers=BEARER)
    )
    assert len(found["nodes"]) == 1 and len(button["nodes"]) == 1
    actions = [
        {"action_type": "NODE_SET_VALUE", "node_id": found["nodes"][0]["node_id"], "value": "Grace Hopper"},
        {"action_type": "NODE_INVOKE", "node_id": button["nodes"][0]["node_id"], "action": "press"},
    ]
    result = call_tool(
        mcp, "computer_execute_actions", {"actions": actions, "include_screenshot": True}, headers=BEARER
    )
    assert result["isError"] is False, result
    assert tool_json(result)["failed_index"] is None and result["content"][1]["type"] == "image"
    until(lambda: page_title(desktop) == "sent:Grace Hopper", 20)
    failed = call_tool(mcp, "computer_execute_actions", {"actions": [{**actions[1], "action": "fly"}]}, headers=BEARER)
    assert (
        failed["isError"] is True and tool_json(failed)["failed_index"] == 0 and "press" in tool_json(failed)["error"]
    )


def test_no_display_is_503_with_a_hint(gateway_settings: GatewaySettings) -> None:
    settings = replace(GatewaySettings.from_env({"AGENTBOX_DISPLAY": ":9", "DISABLE_VNC": "true"}))
    assert not settings.vnc_enabled
    with serve_app(build_app(replace(gateway_settings, display=":9", vnc_enabled=False))) as url:
        info = httpx.get(f"{url}/v2/computer/info").json()["data"]
        assert info["available"] is False and not any(info["capabilities"].values())
        for method, path in (
            ("GET", "screenshot"),
            ("GET", "accessibility/nodes"),
            ("GET", "clipboard"),
            ("GET", "windows"),
        ):
            response = httpx.request(method, f"{url}/v2/computer/{path}")
            assert response.status_code == 503 and "DISABLE_VNC" in response.json()["hint"], response.text
        action = httpx.post(f"{url}/v2/computer/actions", json={"action_type": "MOVE_TO", "x": 1, "y": 1})
        assert action.status_code == 503 and "DISABLE_VNC" in action.json()["hint"]
        nodes = call_tool(f"{url}/mcp", "computer_accessibility_nodes", {})
        assert nodes["isError"] is True and "DISABLE_VNC" in tool_text(nodes)
