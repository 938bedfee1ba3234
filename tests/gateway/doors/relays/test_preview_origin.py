"""Previews on an origin of their own (issue 26, items 1 and 11): a real gateway (``aiod start``) in
front of a real app (tests/support/preview_app.py), reached with httpx and websockets. A request
whose ``Host`` is ``{port}.localhost`` (or ``AIO_PREVIEW_HOST``) goes wholly to the app; there the
gateway's key in ``Authorization`` and its session cookie open nothing, a preview ticket opens one
port; a preview origin cannot call the gateway; the path form is sandboxed."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from agentbox_common.settings import ConfigError
from agentbox_gateway.settings import GatewaySettings
from tests.support import shared_http
from tests.support.jsonrpc import call_tool, tool_json
from tests.support.preview import APP, echo
from tests.support.servers import console_script, free_port, run_command

KEY = "preview-origin-key-9b2e"
AUTH = {"Authorization": f"Bearer {KEY}"}
PAGE = {"Accept": "text/html,application/xhtml+xml"}
PATTERN = "{port}-preview.example.com"


@pytest.fixture(scope="module")
def app_port() -> Iterator[int]:
    port = free_port()
    with run_command([sys.executable, str(APP), "--port", str(port)], ready_url=f"http://127.0.0.1:{port}/ready"):
        yield port


def _gateway(env: dict[str, str]) -> Iterator[str]:
    port = free_port()
    args = [console_script("aiod"), "start", "--port", str(port)]
    with run_command(args, env=env, ready_url=f"http://127.0.0.1:{port}/health"):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def keyed() -> Iterator[str]:
    yield from _gateway({"AIO_API_KEY": KEY})


@pytest.fixture(scope="module")
def open_gateway() -> Iterator[str]:
    """No key (the compose default) and a wildcard preview host, as behind a reverse proxy."""
    yield from _gateway({"AIO_PREVIEW_HOST": PATTERN})


def gateway_port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def on_host(host: str, headers: dict[str, str] | None = None) -> dict[str, str]:
    return {"Host": host, **(headers or {})}


def local_host(url: str, port: int) -> str:
    return f"{port}.localhost:{gateway_port(url)}"


def preview_session(url: str, port: int) -> str:
    """A preview ticket minted with the key and redeemed on the preview host: the cookie's value."""
    minted = shared_http.post(f"{url}/tickets/preview", json={"port": port}, headers=AUTH)
    assert minted.status_code == 200, minted.text
    ticket = minted.json()["data"]["ticket"]
    redeemed = shared_http.get(f"{url}/?agentbox_preview={ticket}", headers=on_host(local_host(url, port)))
    assert redeemed.status_code == 303, redeemed.text
    return redeemed.cookies["agentbox_preview"]


def test_a_preview_host_goes_wholly_to_the_app(keyed: str, app_port: int) -> None:
    host = local_host(keyed, app_port)
    key = {"X-AIO-API-Key": KEY}
    for path in ("/v1/sandbox", "/tickets", "/login", "/mcp", "/health", "/proxy/1/x", "/", "/v1/shell/ws"):
        answer = echo(shared_http.get(keyed + path, headers=on_host(host, key)))
        assert answer["path"] == path, path
        assert answer["headers"]["x-forwarded-host"] == host and "x-forwarded-prefix" not in answer["headers"]
        assert KEY not in json.dumps(answer)  # the key header is stripped
    posted = shared_http.post(f"{keyed}/tickets", headers=on_host(host, {"X-API-Key": KEY}), content=b"{}")
    assert echo(posted)["method"] == "POST"
    assert "content-security-policy" not in posted.headers  # the app's own origin: not sandboxed
    assert echo(shared_http.get(f"{keyed}/x", headers={"X-Forwarded-Host": host, **key}))["path"] == "/x"


def test_the_gateway_credentials_do_not_open_a_preview(keyed: str, app_port: int) -> None:
    host = on_host(local_host(keyed, app_port))
    session = shared_http.post(f"{keyed}/login", data={"key": KEY, "next": "/"}).cookies["agentbox_session"]
    ticket = shared_http.post(f"{keyed}/tickets", headers=AUTH).json()["data"]["ticket"]
    for headers, query in (
        ({}, ""),
        (AUTH, ""),  # Authorization is the app's header there, never the gateway's key
        ({"Cookie": f"agentbox_session={session}"}, ""),
        ({}, f"?api_key={KEY}"),
        ({}, f"?ticket={ticket}"),
    ):
        response = shared_http.get(f"{keyed}/v1/sandbox{query}", headers={**host, **headers})
        assert response.status_code == 401, (headers, query)
        assert "preview" in response.json()["message"]
    page = shared_http.get(f"{keyed}/", headers={**host, **PAGE})
    assert page.status_code == 401 and "dashboard" in page.text and 'type="password"' not in page.text
    with pytest.raises(InvalidStatus) as refused:
        connect(f"ws://127.0.0.1:{gateway_port(keyed)}/ws", additional_headers={**host, **AUTH}, open_timeout=5)
    assert refused.value.response.status_code == 401


def test_a_preview_ticket_opens_its_port_once_and_nothing_else(keyed: str, app_port: int) -> None:
    assert shared_http.post(f"{keyed}/tickets/preview", json={"port": app_port}).status_code == 401
    for bad in ({"port": 0}, {"port": "3000"}, {"port": True}, {}, {"port": gateway_port(keyed)}):
        assert shared_http.post(f"{keyed}/tickets/preview", json=bad, headers=AUTH).status_code == 400, bad
    data = shared_http.post(f"{keyed}/tickets/preview", json={"port": app_port}, headers=AUTH).json()["data"]
    host = local_host(keyed, app_port)
    assert data["url"] == f"http://{host}/?agentbox_preview={data['ticket']}" and data["port"] == app_port

    first = shared_http.get(f"{keyed}/deep/page?x=1&agentbox_preview={data['ticket']}&y=2", headers=on_host(host))
    assert first.status_code == 303 and first.headers["location"] == "/deep/page?x=1&y=2"
    set_cookie = first.headers["set-cookie"]
    assert set_cookie.startswith("agentbox_preview=")
    for flag in ("HttpOnly", "SameSite=Lax", "Path=/"):
        assert flag in set_cookie
    assert "domain" not in set_cookie.lower()  # host-only: that one preview origin
    token = first.cookies["agentbox_preview"]
    again = shared_http.get(f"{keyed}/deep/page?agentbox_preview={data['ticket']}", headers=on_host(host))
    assert again.status_code == 401  # single use

    cookie = {"Cookie": f"agentbox_preview={token}; theme=dark"}
    answer = echo(shared_http.get(f"{keyed}/v1/sandbox?q=1", headers=on_host(host, cookie)))
    assert answer["query"] == "q=1" and answer["headers"]["cookie"] == "theme=dark"  # the cookie stays here
    stale = shared_http.get(f"{keyed}/a?agentbox_preview={data['ticket']}", headers=on_host(host, cookie))
    assert stale.status_code == 303 and stale.headers["location"] == "/a" and "set-cookie" not in stale.headers
    other = local_host(keyed, free_port())
    assert shared_http.get(f"{keyed}/", headers=on_host(other, cookie)).status_code == 401  # one port only
    # The gateway never takes a preview credential for its own.
    assert shared_http.get(f"{keyed}/llms.txt", headers=cookie).status_code == 401
    assert shared_http.get(f"{keyed}/v1/sandbox", headers={"Cookie": f"agentbox_session={token}"}).status_code == 401
    spare = shared_http.post(f"{keyed}/tickets/preview", json={"port": app_port}, headers=AUTH).json()["data"]["ticket"]
    assert shared_http.get(f"{keyed}/llms.txt?ticket={spare}").status_code == 401
    wrong_port = shared_http.post(f"{keyed}/tickets/preview", json={"port": app_port}, headers=AUTH).json()["data"]
    assert (
        shared_http.get(f"{keyed}/?agentbox_preview={wrong_port['ticket']}", headers=on_host(other)).status_code == 401
    )


def test_the_apps_own_authorization_and_cookies_pass_untouched(keyed: str, app_port: int) -> None:
    token = preview_session(keyed, app_port)
    headers = {
        "Authorization": "Bearer the-apps-own-token",
        "Cookie": f"agentbox_preview={token}; app_session=abc",
        "X-API-Key": "the-apps-own-key",
    }
    answer = echo(shared_http.get(f"{keyed}/api/me", headers=on_host(local_host(keyed, app_port), headers)))
    assert answer["headers"]["authorization"] == "Bearer the-apps-own-token"
    assert answer["headers"]["cookie"] == "app_session=abc" and answer["headers"]["x-api-key"] == "the-apps-own-key"
    socket_headers = {**headers, "Origin": f"http://{local_host(keyed, app_port)}"}
    host = on_host(local_host(keyed, app_port), socket_headers)
    with connect(f"ws://127.0.0.1:{gateway_port(keyed)}/ws", additional_headers=host, open_timeout=5) as socket_:
        socket_.send("hmr")
        assert socket_.recv(timeout=5) == "hmr"


@pytest.mark.parametrize("which", ["keyed", "open_gateway"])
def test_a_preview_origin_cannot_call_the_gateway(which: str, app_port: int, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue(which)
    credentials = AUTH if which == "keyed" else {}
    for preview_origin in (f"http://{local_host(url, app_port)}", f"https://{app_port}-preview.example.com"):
        origin = {"Origin": preview_origin, **credentials}
        if which == "keyed" and "example" in preview_origin:
            continue  # that pattern is the open gateway's
        exec_ = shared_http.post(f"{url}/v1/shell/exec", json={"command": "echo pwned"}, headers=origin)
        assert exec_.status_code == 403 and "preview origin" in exec_.json()["message"], exec_.text
        assert shared_http.get(f"{url}/v1/sandbox", headers=origin).status_code == 403
        assert shared_http.post(f"{url}/tickets", headers=origin).status_code == 403
        with pytest.raises(InvalidStatus) as refused:
            connect(url.replace("http", "ws") + "/v1/shell/ws", additional_headers=origin, open_timeout=5)
        assert refused.value.response.status_code == 403
    own = {"Origin": url, **credentials}
    # The first REST call builds the REST door and spawns a bash: slow on a loaded machine.
    assert (
        shared_http.post(f"{url}/v1/shell/exec", json={"command": "echo ok"}, headers=own, timeout=60).status_code
        == 200
    )


def test_the_path_form_is_sandboxed_in_a_browser(keyed: str, app_port: int) -> None:
    for prefix in (f"/proxy/{app_port}", f"/absproxy/{app_port}"):
        response = shared_http.get(f"{keyed}{prefix}/csp", headers=AUTH)
        assert response.status_code == 200
        policies = response.headers.get_list("content-security-policy")
        assert "img-src 'self'" in policies  # the app's own policy still holds
        [sandbox] = [policy for policy in policies if policy.startswith("sandbox")]
        assert "allow-scripts" in sandbox and "allow-same-origin" not in sandbox
    # What a sandboxed page sends (Origin: null) is refused, cookie or not.
    session = shared_http.post(f"{keyed}/login", data={"key": KEY, "next": "/"}).cookies["agentbox_session"]
    null = {"Origin": "null", "Cookie": f"agentbox_session={session}"}
    assert shared_http.post(f"{keyed}/tickets", headers=null).status_code == 403


def test_a_key_less_preview_origin_is_open_but_not_to_foreign_pages(open_gateway: str, app_port: int) -> None:
    host = f"{app_port}-preview.example.com"
    answer = echo(shared_http.get(f"{open_gateway}/v1/sandbox", headers=on_host(host)))
    assert answer["path"] == "/v1/sandbox" and answer["headers"]["x-forwarded-host"] == host
    local = echo(
        shared_http.get(f"{open_gateway}/x?agentbox_preview=t", headers=on_host(local_host(open_gateway, app_port)))
    )
    assert local["path"] == "/x" and local["query"] == ""
    sibling = {"Origin": f"https://{free_port()}-preview.example.com"}  # a frontend calling its API
    assert shared_http.post(f"{open_gateway}/api", headers=on_host(host, sibling)).status_code == 200
    foreign = shared_http.post(f"{open_gateway}/api", headers=on_host(host, {"Origin": "https://evil.example"}))
    assert foreign.status_code == 403
    # HostGuard still refuses other names, and serves the pattern's.
    assert shared_http.get(f"{open_gateway}/health", headers=on_host("elsewhere.example.com")).status_code == 421
    assert shared_http.get(f"{open_gateway}/health", headers=on_host("preview.example.com")).status_code == 421
    minted = shared_http.post(f"{open_gateway}/tickets/preview", json={"port": app_port}).json()["data"]
    assert minted["ticket"] is None and minted["url"] == f"http://{app_port}.localhost:{gateway_port(open_gateway)}/"


def test_context_links_open_previews_on_their_own_origin(keyed: str, open_gateway: str, app_port: int) -> None:
    def previews(url: str, headers: dict[str, str]) -> dict[int, dict[str, object]]:
        system = shared_http.get(f"{url}/v1/sandbox", headers=headers, timeout=60).json()["detail"]["system"]
        return {entry["port"]: entry for entry in system["previews"]}

    local = previews(keyed, AUTH)[app_port]
    assert local["preview_url"] == f"http://{local_host(keyed, app_port)}/"
    assert local["url"] == f"{keyed}/proxy/{app_port}/"  # the path form, for programs
    remote = {**AUTH, "X-Forwarded-Proto": "https", "X-Forwarded-Host": "box.example"}
    assert previews(keyed, remote)[app_port]["preview_url"] == f"https://box.example/proxy/{app_port}/"
    behind = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "box.example"}
    assert previews(open_gateway, behind)[app_port]["preview_url"] == f"https://{app_port}-preview.example.com/"

    info = tool_json(call_tool(f"{keyed}/mcp", "sandbox_get_context", headers=AUTH))  # probes cached by now
    [entry] = [entry for entry in info["previews"] if entry["port"] == app_port]
    assert entry["preview_url"] == local["preview_url"] and local["preview_url"] in info["info"]


def test_the_preview_host_setting_is_checked() -> None:
    lowered = GatewaySettings.from_env({"AIO_PREVIEW_HOST": " {PORT}-p.example.com "})
    assert lowered.preview_host == "{port}-p.example.com"
    assert GatewaySettings.from_env({"AIO_PREVIEW_HOST": "{port}.box.example:8443"}).preview_host
    for bad in ("preview.example.com", "{port}{port}.x", "https://{port}.x", "{port}.x/path", "{port}.x:port"):
        with pytest.raises(ConfigError, match="AIO_PREVIEW_HOST"):
            GatewaySettings.from_env({"AIO_PREVIEW_HOST": bad})
