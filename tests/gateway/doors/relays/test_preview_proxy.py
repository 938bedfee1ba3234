"""``/proxy/{port}/`` and ``/absproxy/{port}/``: a real gateway process (``aiod start``) in front of a
real app process (tests/support/preview_app.py) on loopback, reached with httpx and websockets."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.support import shared_http
from tests.support.jsonrpc import call_tool, tool_json
from tests.support.preview import APP, echo, memory_kib
from tests.support.servers import console_script, free_port, run_command

KEY = "preview-proxy-key-5e1d"
AUTH = {"Authorization": f"Bearer {KEY}"}
MIB = 1024 * 1024


@contextlib.contextmanager
def app_process(host: str = "127.0.0.1") -> Iterator[int]:
    port = free_port()
    ready = f"http://{'[::1]' if host == '::1' else host}:{port}/ready"
    with run_command([sys.executable, str(APP), "--port", str(port), "--host", host], ready_url=ready):
        yield port


@pytest.fixture(scope="module")
def app_port() -> Iterator[int]:
    with app_process() as port:
        yield port


@pytest.fixture(scope="module")
def gateway() -> Iterator[tuple[str, int]]:
    """``aiod start`` with a key and a 1 s proxy timeout; yields its URL and pid."""
    port = free_port()
    env = {"AIO_API_KEY": KEY, "AIO_PROXY_TIMEOUT": "1"}
    args = [console_script("aiod"), "start", "--port", str(port)]
    with run_command(args, env=env, ready_url=f"http://127.0.0.1:{port}/health") as process:
        yield f"http://127.0.0.1:{port}", process.pid


@pytest.fixture
def url(gateway: tuple[str, int]) -> str:
    return gateway[0]


def gateway_memory_kib(pid: int) -> dict[str, int]:
    return memory_kib(Path(f"/proc/{pid}/status").read_text())


def test_prefix_is_stripped_and_forwarded_headers_are_set(url: str, app_port: int) -> None:
    answer = echo(shared_http.get(f"{url}/proxy/{app_port}/some/deep%20path?x=1&y=a%20b&x=2", headers=AUTH))
    assert answer["path"] == "/some/deep%20path" and answer["query"] == "x=1&y=a%20b&x=2"
    headers = answer["headers"]
    assert headers["x-forwarded-prefix"] == f"/proxy/{app_port}"
    assert headers["x-forwarded-host"] == url.removeprefix("http://")
    assert headers["x-forwarded-proto"] == "http" and headers["x-forwarded-for"] == "127.0.0.1"
    assert echo(shared_http.get(f"{url}/proxy/{app_port}/", headers=AUTH))["path"] == "/"

    outer = {
        **AUTH,
        "X-Forwarded-Proto": "https",
        "X-Forwarded-Host": "box.example",
        "X-Forwarded-Prefix": "/sandbox/7",
        "X-Forwarded-For": "203.0.113.9",
    }
    headers = echo(shared_http.get(f"{url}/proxy/{app_port}/a", headers=outer))["headers"]
    assert headers["x-forwarded-prefix"] == f"/sandbox/7/proxy/{app_port}"
    assert headers["x-forwarded-host"] == "box.example" and headers["x-forwarded-proto"] == "https"
    assert headers["x-forwarded-for"] == "203.0.113.9, 127.0.0.1"


def test_absproxy_keeps_the_whole_path(url: str, app_port: int) -> None:
    answer = echo(shared_http.get(f"{url}/absproxy/{app_port}/assets/app.js?v=3", headers=AUTH))
    assert answer["path"] == f"/absproxy/{app_port}/assets/app.js" and answer["query"] == "v=3"
    assert "x-forwarded-prefix" not in answer["headers"]


def test_redirects_are_rewritten_under_the_prefix(url: str, app_port: int) -> None:
    def location(path: str, **headers: str) -> str:
        response = shared_http.get(f"{url}{path}", headers={**AUTH, **headers})
        assert response.is_redirect, response.text
        return response.headers["location"]

    assert location(f"/proxy/{app_port}/redirect") == f"/proxy/{app_port}/landing?from=redirect"
    assert location(f"/proxy/{app_port}/redirect-absolute") == f"/proxy/{app_port}/landing"
    assert location(f"/proxy/{app_port}/redirect", **{"X-Forwarded-Prefix": "/sb"}) == (
        f"/sb/proxy/{app_port}/landing?from=redirect"
    )
    assert location(f"/absproxy/{app_port}/redirect") == f"/absproxy/{app_port}/landing?from=redirect"
    assert location(f"/absproxy/{app_port}/redirect-absolute") == f"/absproxy/{app_port}/landing"
    assert location(f"/proxy/{app_port}?q=1") == f"/proxy/{app_port}/?q=1"  # so relative links resolve
    followed = shared_http.get(f"{url}/proxy/{app_port}/redirect", headers=AUTH, follow_redirects=True)
    assert echo(followed)["path"] == "/landing"


def test_every_method_and_request_bodies_pass_whole(url: str, app_port: int) -> None:
    payload = os.urandom(3 * MIB)
    answer = echo(shared_http.post(f"{url}/proxy/{app_port}/upload", content=payload, headers=AUTH))
    assert answer["method"] == "POST" and answer["body_length"] == len(payload)
    assert answer["body_sha256"] == hashlib.sha256(payload).hexdigest()
    assert answer["headers"]["content-length"] == str(len(payload))

    def pieces() -> Iterator[bytes]:  # no Content-Length: sent chunked, passed on as it comes
        for start in range(0, len(payload), 64 * 1024):
            yield payload[start : start + 64 * 1024]

    streamed = echo(shared_http.put(f"{url}/proxy/{app_port}/upload", content=pieces(), headers=AUTH))
    assert streamed["method"] == "PUT" and streamed["body_sha256"] == answer["body_sha256"]
    for method in ("PATCH", "DELETE", "OPTIONS"):
        assert echo(shared_http.request(method, f"{url}/proxy/{app_port}/x", headers=AUTH))["method"] == method
    head = shared_http.head(f"{url}/proxy/{app_port}/x", headers=AUTH)
    assert head.status_code == 200 and head.content == b""


def test_server_sent_events_arrive_before_the_app_finishes(url: str, app_port: int) -> None:
    started = time.monotonic()
    arrivals: list[tuple[float, str]] = []
    with shared_http.stream("GET", f"{url}/proxy/{app_port}/sse?pause=3", headers=AUTH, timeout=10) as response:
        assert response.headers["content-type"] == "text/event-stream"
        for line in response.iter_lines():
            if line.startswith("data: "):
                arrivals.append((time.monotonic() - started, line[6:]))
    assert [data for _, data in arrivals] == ["first", "second"]
    assert arrivals[0][0] < 1.5, arrivals  # the app was still sleeping when the first event came
    assert arrivals[1][0] >= 3.0, arrivals


def test_websocket_echo_with_subprotocol(url: str, app_port: int) -> None:
    for prefix in (f"/proxy/{app_port}", f"/absproxy/{app_port}"):
        ws_url = "ws" + url.removeprefix("http") + f"{prefix}/ws"
        with connect(ws_url, subprotocols=["chat.v2", "chat.v1"], additional_headers=AUTH, open_timeout=5) as socket_:
            assert socket_.subprotocol == "chat.v2"
            socket_.send("hello")
            assert socket_.recv(timeout=5) == "hello"
            blob = os.urandom(200_000)
            socket_.send(blob)
            assert socket_.recv(timeout=5) == blob


def test_websocket_needs_the_key_and_an_app(url: str, app_port: int) -> None:
    ws_url = "ws" + url.removeprefix("http")
    with pytest.raises(InvalidStatus) as refused:
        connect(f"{ws_url}/proxy/{app_port}/ws", open_timeout=5)
    assert refused.value.response.status_code in (401, 403)
    with pytest.raises(InvalidStatus) as nothing:
        connect(f"{ws_url}/proxy/{free_port()}/ws", additional_headers=AUTH, open_timeout=5)
    assert nothing.value.response.status_code == 502
    assert b"Nothing is listening on port" in nothing.value.response.body


def test_bad_ports_nothing_listening_and_hanging_apps(url: str, app_port: int) -> None:
    for port in ("abc", "0", "65536", "99999999999", "-1", "٣"):
        response = shared_http.get(f"{url}/proxy/{port}/", headers=AUTH)
        assert response.status_code == 400 and "from 1 to 65535" in response.json()["message"], port
    own = url.rsplit(":", 1)[1]
    for prefix in ("proxy", "absproxy"):
        response = shared_http.get(f"{url}/{prefix}/{own}/health", headers=AUTH)
        assert response.status_code == 400 and "gateway's own port" in response.json()["message"]
    idle = free_port()
    response = shared_http.get(f"{url}/proxy/{idle}/", headers=AUTH)
    assert response.status_code == 502 and f"port {idle}" in response.json()["message"]
    started = time.monotonic()
    response = shared_http.get(f"{url}/proxy/{app_port}/hang", headers=AUTH, timeout=10)
    assert response.status_code == 504 and "AIO_PROXY_TIMEOUT" in response.json()["message"]
    assert time.monotonic() - started < 5
    assert echo(shared_http.get(f"{url}/proxy/{app_port}/after", headers=AUTH))["path"] == "/after"  # still up


def test_no_key_is_refused(url: str, app_port: int) -> None:
    for path in (f"/proxy/{app_port}/", f"/absproxy/{app_port}/x", f"/proxy/{app_port}"):
        assert shared_http.get(url + path).status_code == 401
        assert shared_http.post(url + path, headers={"Authorization": "Bearer wrong"}).status_code == 401


def test_the_gateway_key_and_session_cookie_never_reach_the_app(url: str, app_port: int) -> None:
    base = f"{url}/proxy/{app_port}/look"
    seen = [
        echo(shared_http.get(base, headers=AUTH)),
        echo(shared_http.get(base, headers={"x-api-key": KEY, "Authorization": "Basic YXBwOnB3"})),
        echo(
            shared_http.get(
                f"{base}?page=2&api_key={KEY}",
                headers={
                    "Referer": f"{url}/proxy/{app_port}/?api_key={KEY}",
                    "Cookie": "agentbox_session=s3; theme=dark",
                },
            )
        ),
    ]
    for answer in seen:
        assert KEY not in json.dumps(answer)
    assert seen[1]["headers"]["authorization"] == "Basic YXBwOnB3"  # the app's own credentials pass
    assert seen[2]["query"] == "page=2" and seen[2]["headers"]["cookie"] == "theme=dark"


def test_app_cookies_cannot_overwrite_the_gateway_session(url: str, app_port: int) -> None:
    response = shared_http.get(f"{url}/proxy/{app_port}/cookie", headers=AUTH)
    assert response.headers.get_list("set-cookie") == ["app_cookie=1; Path=/"]
    assert response.headers.get_list("date") and len(response.headers.get_list("server")) == 1


def test_keep_alive_connections_to_the_app_are_reused(url: str, app_port: int) -> None:
    with httpx.Client(headers=AUTH) as client:
        peers = {echo(client.get(f"{url}/proxy/{app_port}/n{i}"))["peer"] for i in range(5)}
    assert len(peers) == 1


def test_app_on_ipv6_loopback_only(url: str) -> None:
    with socket.socket(socket.AF_INET6) as probe:
        try:
            probe.bind(("::1", 0))
        except OSError:
            pytest.skip("no IPv6 loopback here")
    with app_process("::1") as port:
        base = f"{url}/proxy/{port}"
        posted = echo(shared_http.post(f"{base}/v6", content=b"first a POST", headers=AUTH))  # not lost on the retry
        answer = echo(shared_http.get(f"{base}/v6", headers=AUTH))
    assert posted["body_sha256"] == hashlib.sha256(b"first a POST").hexdigest()
    assert answer["path"] == "/v6"


def test_large_download_is_streamed_without_growing_the_gateway(gateway: tuple[str, int], app_port: int) -> None:
    url, pid = gateway
    size = 256 * MIB
    shared_http.get(f"{url}/proxy/{app_port}/download?bytes={MIB}", headers=AUTH).raise_for_status()  # warm
    before = gateway_memory_kib(pid)
    received = 0
    with shared_http.stream(
        "GET", f"{url}/proxy/{app_port}/download?bytes={size}", headers=AUTH, timeout=60
    ) as response:
        assert response.status_code == 200
        for chunk in response.iter_raw():
            received += len(chunk)
    after = gateway_memory_kib(pid)
    assert received == size
    growth_mib = (after["VmHWM"] - before["VmHWM"]) / 1024
    assert growth_mib < 24, (before, after)
    assert (after["VmRSS"] - before["VmRSS"]) / 1024 < 24, (before, after)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def app_downloads(app_port: int) -> list[int]:
    """The bytes each ended download of the app wrote, oldest first."""
    downloads: list[int] = shared_http.get(f"http://127.0.0.1:{app_port}/downloads").json()
    return downloads


def test_a_caller_that_leaves_stops_the_transfer(gateway: tuple[str, int], app_port: int) -> None:
    url, pid = gateway
    # An app that outruns the gateway is what once kept the transfer going (the cancellation was never
    # delivered); whether it does in one try is a race, so a few tries make a regression show.
    for _ in range(4):
        ended = len(app_downloads(app_port))
        with shared_http.stream(
            "GET", f"{url}/proxy/{app_port}/download?bytes={8 * 1024 * MIB}", headers=AUTH
        ) as response:
            for _ in zip(range(8), response.iter_raw(), strict=False):
                pass
        deadline = time.monotonic() + 5
        while len(app_downloads(app_port)) == ended and time.monotonic() < deadline:
            time.sleep(0.05)
        downloads = app_downloads(app_port)
        assert len(downloads) == ended + 1, "the gateway did not close the app's connection"
        # what sits in the buffers between app, gateway and caller (a few MiB), not GiBs pulled into nowhere
        assert downloads[-1] < 48 * MIB
    before = cpu_seconds(pid)
    time.sleep(1)
    assert cpu_seconds(pid) - before < 0.5  # idle again (loaded CI needs slack)
    assert echo(shared_http.get(f"{url}/proxy/{app_port}/still", headers=AUTH))["path"] == "/still"


def test_context_lists_listening_ports_with_preview_urls(url: str, app_port: int) -> None:
    forwarded = {**AUTH, "X-Forwarded-Proto": "https", "X-Forwarded-Host": "box.example"}
    system = shared_http.get(f"{url}/v1/sandbox", headers=forwarded).json()["detail"]["system"]
    previews = {entry["port"]: entry for entry in system["previews"]}
    assert previews[app_port] == {
        "port": app_port,
        "url": f"https://box.example/proxy/{app_port}/",
        "absproxy_url": f"https://box.example/absproxy/{app_port}/",
        "preview_url": f"https://box.example/proxy/{app_port}/",  # a remote caller, no AIO_PREVIEW_HOST
    }
    assert int(url.rsplit(":", 1)[1]) not in previews  # the gateway itself is not a preview

    info = tool_json(call_tool(f"{url}/mcp", "sandbox_get_context", headers=forwarded))
    assert f"https://box.example/proxy/{app_port}/" in [entry["url"] for entry in info["previews"]]
    assert f"https://box.example/proxy/{app_port}/" in info["info"]
    plain = tool_json(call_tool(f"{url}/mcp", "sandbox_get_context", headers=AUTH))
    assert f"{url}/proxy/{app_port}/" in [entry["url"] for entry in plain["previews"]]
