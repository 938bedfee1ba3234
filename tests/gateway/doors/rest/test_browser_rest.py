"""``/v1/browser/*`` through the public agent-sandbox SDK, unmodified, parsing into its models."""

from __future__ import annotations

import pytest
from agent_sandbox import Sandbox
from agent_sandbox.browser.types.action import Action_Click, Action_Hotkey, Action_Typing, Action_Wait
from agent_sandbox.core.api_error import ApiError
from agent_sandbox.types.resolution import Resolution

from tests.support import shared_http
from tests.support.headless_chromium import Chromium, keyed_chromium_settings, shown_page
from tests.support.png import decode_png

pytestmark = pytest.mark.chromium
KEY = "rest-browser-key"
AUTH = {"Authorization": f"Bearer {KEY}"}

gateway_settings = keyed_chromium_settings(KEY)


@pytest.fixture
def client(gateway: str) -> Sandbox:
    return Sandbox(base_url=gateway, headers={"Authorization": f"Bearer {KEY}"}, timeout=60)


def test_get_info_parses_into_the_sdk_model(client: Sandbox, gateway: str) -> None:
    info = client.browser.get_info()
    assert info.success is True
    assert info.data.vnc_url == ""
    assert info.data.cdp_url.startswith(f"ws://{gateway.removeprefix('http://')}/cdp/devtools/browser/")
    assert "Chrome" in info.data.user_agent
    assert info.data.viewport.width > 0 and info.data.viewport.height > 0


def test_screenshot_is_a_raw_png_with_its_size_in_headers(
    client: Sandbox, chromium: Chromium, pages_url: str, gateway: str
) -> None:
    with shown_page(chromium.cdp_url, f"{pages_url}/color/rgb(200,0,200)"):
        data = b"".join(client.browser.screenshot())
        viewport = client.browser.get_info().data.viewport
        headers = shared_http.get(f"{gateway}/v1/browser/screenshot", headers=AUTH).headers
    png = decode_png(data, rows=4)
    assert (png.width, png.height) == (viewport.width, viewport.height)
    assert png.pixel(3, 3)[:3] == (200, 0, 200)
    assert headers["content-type"] == "image/png"
    assert headers["x-screenshot-width"] == str(png.width)
    assert headers["x-screenshot-height"] == str(png.height)


def test_execute_action_drives_the_page(client: Sandbox, chromium: Chromium, pages_url: str) -> None:
    with shown_page(chromium.cdp_url, f"{pages_url}/form") as page:
        clicked = client.browser.execute_action(request=Action_Click(x=190, y=160))
        assert clicked.status == "success" and clicked.success is True
        assert clicked.action_performed == "Clicked the left button at (190, 160)"
        assert clicked.data.action_performed == clicked.action_performed
        client.browser.execute_action(request=Action_Typing(text="via the SDK"))
        client.browser.execute_action(request=Action_Hotkey(keys=["shift", "Home"]))
        client.browser.execute_action(request=Action_Typing(text="replaced"))
        assert client.browser.execute_action(request=Action_Wait(duration=0.1)).status == "success"
        assert page.input_value("#name") == "replaced"


def test_bad_action_is_a_validation_error(gateway: str) -> None:
    response = shared_http.post(
        f"{gateway}/v1/browser/actions",
        json={"action_type": "SCROLL", "dy": 500},
        headers={"Authorization": f"Bearer {KEY}"},
    )
    assert response.status_code == 422
    body = response.json()
    assert body["success"] is False
    assert body["detail"][0]["loc"] == ["body", "dy"]
    assert "between -100 and 100" in body["detail"][0]["msg"]


def test_set_config_changes_the_display_resolution(client: Sandbox, chromium: Chromium, pages_url: str) -> None:
    with shown_page(chromium.cdp_url, f"{pages_url}/form") as page:
        answer = client.browser.set_config(resolution=Resolution(width=800, height=600))
        assert answer.success is True and answer.data == {"viewport": {"width": 800, "height": 600}}
        assert page.evaluate("[innerWidth, innerHeight]") == [800, 600]
        assert decode_png(b"".join(client.browser.screenshot()), rows=1).width == 800
        with pytest.raises(ApiError) as refused:
            client.browser.set_config(resolution=Resolution(width=801, height=600))
        assert refused.value.status_code == 422
        client.browser.set_config(resolution=Resolution(width=1280, height=720))
