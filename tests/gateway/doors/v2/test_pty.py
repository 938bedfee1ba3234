"""``/v2/pty``: AIO's terminals as resources, driven as AIO's documentation describes them
(website/docs/en/daemon/examples/terminal.mdx, start/migration.md) with httpx and websockets only,
against a real gateway on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support.servers import serve_app

pytestmark = [pytest.mark.usefixtures("own_home"), pytest.mark.anyio]
KEY = "pty-socket-key-7c1d"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def ws_url(base: str, path: str) -> str:
    return base.replace("http://", "ws://", 1) + path


def api(base: str, **headers: str) -> httpx.Client:
    return httpx.Client(base_url=base, timeout=60, headers=headers)


def data(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["success"] is (status < 400), body
    return body["data"]


async def refused_status(url: str, **options: Any) -> int:
    """The HTTP status the WebSocket upgrade to ``url`` is refused with (an accepted one fails)."""
    with pytest.raises(InvalidStatus) as refused:
        await connect(url, **options)
    return refused.value.response.status_code


async def frame(socket: ClientConnection, within: float = 15) -> Any:
    message = await asyncio.wait_for(socket.recv(), within)
    return message if isinstance(message, bytes) else json.loads(message)


async def output_until(socket: ClientConnection, marker: str, within: float = 20) -> str:
    """The ``output`` frames' text up to and including the one where ``marker`` shows."""
    seen = ""
    deadline = time.monotonic() + within
    while marker not in seen:
        message = await frame(socket, max(deadline - time.monotonic(), 0.01))
        assert message["type"] in ("output", "restore_output"), message
        seen += message["data"]
    return seen


def wait_idle(client: httpx.Client, session_id: str, within: float = 30) -> None:
    """Until the terminal is back at its prompt (nothing in the foreground)."""
    deadline = time.monotonic() + within
    while data(client.get(f"/v2/pty/sessions/{session_id}"))["status"] != "idle":
        assert time.monotonic() < deadline, "the terminal did not come back to its prompt"
        time.sleep(0.05)


def alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")


def wait_gone(pid: int, within: float = 10) -> None:
    """Until process ``pid`` is gone (a closed terminal kills its shell)."""
    deadline = time.monotonic() + within
    while alive(pid):
        assert time.monotonic() < deadline, f"process {pid} outlived its terminal"
        time.sleep(0.05)


# -- sessions as resources ---------------------------------------------------------------------


def test_create_list_inspect_resize_delete(gateway: str) -> None:
    with api(gateway) as client:
        created = data(client.post("/v2/pty/sessions", json={"id": "demo-1"}))
        assert created["session_id"] == "demo-1" and (created["cols"], created["rows"]) == (80, 24)
        data(client.post("/v2/pty/sessions", json={"id": "demo-1"}), 409)
        data(client.post("/v2/pty/sessions", json={"id": "../x"}), 400)
        minted = data(client.post("/v2/pty/sessions", json={}))["session_id"]
        listed = data(client.get("/v2/pty/sessions"))
        assert {s["session_id"] for s in listed["sessions"]} == {"demo-1", minted}
        inspected = data(client.get("/v2/pty/sessions/demo-1"))
        assert inspected["attached"] is False and alive(inspected["pid"])

        resized = data(client.patch("/v2/pty/sessions/demo-1", json={"cols": 132, "rows": 43}))
        assert (resized["cols"], resized["rows"]) == (132, 43)
        assert client.patch("/v2/pty/sessions/demo-1", json={"cols": 0, "rows": 43}).status_code == 422
        ran = data(client.post("/v2/pty/sessions/demo-1/exec", json={"command": "stty size"}))
        assert ran["output"].strip() == "43 132"

        closed = data(client.delete("/v2/pty/sessions/demo-1"))
        assert closed == {"session_id": "demo-1", "closed": True}
        data(client.get("/v2/pty/sessions/demo-1"), 404)
        data(client.delete("/v2/pty/sessions/demo-1"), 404)
        wait_gone(inspected["pid"])
        assert [s["session_id"] for s in data(client.get("/v2/pty/sessions"))["sessions"]] == [minted]


def test_exec_input_signal_and_screen_share_one_shell(gateway: str) -> None:
    with api(gateway) as client:
        data(client.post("/v2/pty/sessions", json={"id": "work", "cwd": "/tmp"}))
        ran = data(client.post("/v2/pty/sessions/work/exec", json={"command": "echo out-$((6*7)); pwd"}))
        assert ran["status"] == "completed" and ran["exit_code"] == 0
        assert ran["output"] == "out-42\n/tmp\n"
        assert "echo out-$((6*7)); pwd" in ran["console"] and set(ran) >= {"session_id", "command"}
        failed = data(client.post("/v2/pty/sessions/work/exec", json={"command": "cd /; (exit 3)"}))
        assert failed["exit_code"] == 3
        looped = data(client.post("/v2/pty/sessions/work/exec", json={"command": "for i in 1 2; do\n echo n$i\ndone"}))
        assert looped["output"] == "n1\nn2\n" and looped["exit_code"] == 0
        assert data(client.post("/v2/pty/sessions/work/exec", json={"command": "pwd"}))["output"] == "/\n"

        slow = data(client.post("/v2/pty/sessions/work/exec", json={"command": "echo early; sleep 30", "timeout": 1}))
        assert slow["status"] == "running" and slow["exit_code"] is None and slow["output"] == "early\n"
        data(client.post("/v2/pty/sessions/work/exec", json={"command": "true"}), 409)  # busy
        assert data(client.get("/v2/pty/sessions/work"))["status"] == "busy"
        signalled = data(client.post("/v2/pty/sessions/work/signal", json={"signal": "SIGINT"}))
        assert signalled["signal"] == "SIGINT" and signalled["process_group"] > 0
        wait_idle(client, "work")
        data(client.post("/v2/pty/sessions/work/signal", json={"signal": "SIGNOPE"}), 422)

        typed = data(client.post("/v2/pty/sessions/work/input", json={"data": "export TYPED=yes\n"}))
        assert typed["bytes_written"] == len("export TYPED=yes\n")
        wait_idle(client, "work")
        raw = {"data": "ZWNobyAiJFRZUEVEIg==", "encoding": "base64"}  # echo "$TYPED"
        data(client.post("/v2/pty/sessions/work/input", json=raw))
        data(client.post("/v2/pty/sessions/work/input", json={"data": "\n"}))
        data(client.post("/v2/pty/sessions/work/input", json={"data": "%%%", "encoding": "base64"}), 400)
        wait_idle(client, "work")
        echoed = data(client.post("/v2/pty/sessions/work/exec", json={"command": 'echo "[$TYPED]"'}))
        assert echoed["output"] == "[yes]\n"

        # between a loop's commands the shell itself holds the terminal: still busy until its prompt
        spin = "for i in 1 2 3; do sleep 0.2; x=0; while [ $x -lt 20000 ]; do x=$((x+1)); done; done\n"
        data(client.post("/v2/pty/sessions/work/input", json={"data": spin}))
        seen, until = set(), time.monotonic() + 0.6
        while time.monotonic() < until:
            seen.add(data(client.get("/v2/pty/sessions/work"))["status"])
        assert seen == {"busy"}, seen
        wait_idle(client, "work")

        data(client.post("/v2/pty/sessions/work/exec", json={"command": "clear; printf 'top-line\\n'"}))
        deadline = time.monotonic() + 10  # exec answers at the prompt's mark: the prompt follows
        while not (screen := data(client.get("/v2/pty/sessions/work/screen")))["lines"][1]:
            assert time.monotonic() < deadline, screen
            time.sleep(0.05)
        assert (screen["cols"], screen["rows"]) == (80, 24) and len(screen["lines"]) == 24
        assert screen["lines"][0] == "top-line" and "out-42" not in screen["text"]
        assert screen["cursor"]["row"] == 1 and screen["lines"][1].endswith(("$", "#"))
        for route in ("exec", "input", "signal"):
            data(client.post(f"/v2/pty/sessions/nope/{route}", json={"command": "x", "data": "x"}), 404)
        data(client.get("/v2/pty/sessions/nope/screen"), 404)


# -- sockets -----------------------------------------------------------------------------------


async def test_attach_json_protocol_as_documented(gateway: str) -> None:
    with api(gateway) as client:
        data(client.post("/v2/pty/sessions", json={"id": "demo-1"}))
        async with connect(ws_url(gateway, "/v2/pty/sessions/demo-1/ws")) as socket:
            ready = await frame(socket)
            assert ready == {
                "type": "ready",
                "session_id": "demo-1",
                "transport": "json",
                "backend": "native",
                "resumed": False,
            }
            await socket.send(json.dumps({"type": "input", "data": "echo json-$((20+1))\n"}))
            await output_until(socket, "json-21\r\n")
            await socket.send("echo raw-$((1+1))\n")  # not JSON: typed as it is
            await output_until(socket, "raw-2\r\n")
            await socket.send(json.dumps({"type": "resize", "data": {"cols": 100, "rows": 30}}))
            await socket.send(json.dumps({"type": "ping", "timestamp": 1234}))
            while (message := await frame(socket))["type"] != "pong":
                assert message["type"] == "output"
            assert message == {"type": "pong", "timestamp": 1234}
            assert data(client.get("/v2/pty/sessions/demo-1"))["cols"] == 100
            await socket.send(json.dumps({"type": "dance"}))
            while (message := await frame(socket))["type"] != "error":
                pass
            assert "dance" in message["data"]
            assert data(client.get("/v2/pty/sessions/demo-1"))["attached"] is True
            # REST and the socket share one shell
            data(client.post("/v2/pty/sessions/demo-1/exec", json={"command": "touch shared-file"}))
            await socket.send(json.dumps({"type": "input", "data": "ls shared-file && echo listed\n"}))
            await output_until(socket, "listed\r\n")


async def test_exec_right_after_a_typed_line_waits_for_its_prompt(gateway: str) -> None:
    """A line typed on the socket that ends within a moment is not "a running command" to exec: exec
    waits for its prompt (up to a second) instead of answering 409."""
    with api(gateway) as client:
        data(client.post("/v2/pty/sessions", json={"id": "typed"}))
        async with connect(ws_url(gateway, "/v2/pty/sessions/typed/ws")) as socket:
            await frame(socket)
            await socket.send(json.dumps({"type": "input", "data": "sleep 0.3\n"}))
            await output_until(socket, "sleep 0.3\r\n")
            ran = data(client.post("/v2/pty/sessions/typed/exec", json={"command": "echo after"}))
            assert ran["output"] == "after\n" and ran["exit_code"] == 0, ran


async def test_binary_protocol_moves_raw_bytes(gateway: str) -> None:
    with api(gateway) as client:
        data(client.post("/v2/pty/sessions", json={"id": "bin"}))
        async with connect(ws_url(gateway, "/v2/pty/sessions/bin/ws?protocol=binary")) as socket:
            ready = await frame(socket)
            assert ready["type"] == "ready" and ready["transport"] == "binary"
            await socket.send(b"printf 'caf\\xc3\\xa9-%s\\n' $((3*3))\n")
            seen = b""
            while "café-9\r\n".encode() not in seen:
                message = await frame(socket)
                assert isinstance(message, bytes), message  # data frames only, no JSON around them
                seen += message
            await socket.send(json.dumps({"type": "ping", "timestamp": 7}))
            while isinstance(message := await frame(socket), bytes):
                pass
            assert message == {"type": "pong", "timestamp": 7}


async def test_a_durable_reattach_gets_exactly_the_missed_bytes(gateway: str) -> None:
    """The documented flow: output starts, the client drops two ticks in, the loop goes on; the
    next durable socket is told it resumed and gets only what it missed: the first socket's bytes
    and the second's together are the terminal's whole output, nothing lost, nothing twice."""
    with api(gateway) as client:
        data(client.post("/v2/pty/sessions", json={"id": "durable-1"}))
        url = ws_url(gateway, "/v2/pty/sessions/durable-1/ws?durable=true")
        first = await connect(url)
        assert (await frame(first))["resumed"] is False
        loop = "for i in $(seq 1 6); do echo tick $i; sleep 0.8; done\n"  # gaps a loaded machine keeps
        await first.send(json.dumps({"type": "input", "data": loop}))
        before = await output_until(first, "tick 2\r\n")
        await first.close()
        assert "tick 3" not in before
        assert data(client.get("/v2/pty/sessions/durable-1"))["status"] == "busy"  # still running
        wait_idle(client, "durable-1")

        async with connect(url) as second:
            ready = await frame(second)
            assert ready["type"] == "ready" and ready["resumed"] is True
            resumed = await frame(second)
            assert resumed["type"] == "relay_resumed" and resumed["dropped_bytes"] == 0
            missed = ""
            while len(missed.encode()) < resumed["missed_bytes"]:
                message = await frame(second)
                assert message["type"] == "output"
                missed += message["data"]
        assert len(missed.encode()) == resumed["missed_bytes"]
        assert missed.startswith("tick 3\r\n") and "tick 6\r\n" in missed
        assert "tick 2\r\n" not in missed

        # restore: a snapshot of the whole buffer, which is exactly both sockets' output
        async with connect(ws_url(gateway, "/v2/pty/sessions/durable-1/ws?restore=true")) as third:
            assert (await frame(third))["resumed"] is False
            snapshot = await frame(third)
        assert snapshot["type"] == "restore_output"
        assert snapshot["data"] == before + missed


async def test_restore_replays_a_bounded_snapshot(gateway: str) -> None:
    with api(gateway) as client:
        data(client.post("/v2/pty/sessions", json={"id": "big"}))
        data(client.post("/v2/pty/sessions/big/exec", json={"command": "head -c 600000 /dev/zero | tr '\\0' x; echo"}))
        total = data(client.get("/v2/pty/sessions/big"))["output_bytes"]
        assert total > 600000

        async def snapshot(query: str) -> str:
            async with connect(ws_url(gateway, f"/v2/pty/sessions/big/ws?restore=true{query}")) as socket:
                await frame(socket)
                restored = await frame(socket)
                assert restored["type"] == "restore_output"
                return restored["data"]

        assert len(await snapshot("&replay_bytes=300000")) == 300000
        assert len(await snapshot("&replay_bytes=1000")) == 256 * 1024  # clamped up to 256 KiB
        assert len(await snapshot("")) == total  # 10 MiB by default: all of it
        assert await refused_status(ws_url(gateway, "/v2/pty/sessions/big/ws?replay_bytes=lots")) == 400


async def test_a_new_socket_takes_the_terminal_over(gateway: str) -> None:
    with api(gateway) as client:
        data(client.post("/v2/pty/sessions", json={"id": "shared"}))
        url = ws_url(gateway, "/v2/pty/sessions/shared/ws?durable=true")
        async with connect(url) as first:
            await frame(first)
            await first.send(json.dumps({"type": "input", "data": "echo one-$((0+1))\n"}))
            await output_until(first, "one-1\r\n")
            async with connect(url) as second:
                assert (await frame(second))["resumed"] is True
                while (message := await frame(first))["type"] == "output":
                    pass
                assert message["type"] == "error" and "another client" in message["data"]
                with pytest.raises(ConnectionClosed):
                    await frame(first)
                await second.send(json.dumps({"type": "input", "data": "echo two-$((1+1))\n"}))
                while (message := await frame(second))["type"] != "output" or "two-2" not in message["data"]:
                    pass


async def test_the_anonymous_shell_lives_as_long_as_its_socket(gateway: str) -> None:
    with api(gateway) as client:
        async with connect(ws_url(gateway, "/v2/pty/ws")) as socket:
            ready = await frame(socket)
            assert ready["type"] == "ready" and ready["resumed"] is False and ready["session_id"]
            await socket.send(json.dumps({"type": "input", "data": 'echo "pid=$$="\n'}))
            seen = await output_until(socket, "=\r\n")  # the output's line end, not the typed line's
            pid = int(seen.rsplit("pid=", 1)[1].split("=")[0])
            assert alive(pid)
            assert data(client.get("/v2/pty/sessions"))["sessions"] == []  # not addressable
            data(client.get(f"/v2/pty/sessions/{ready['session_id']}"), 404)
        wait_gone(pid)
        for query in ("?durable=true", "?restore=true"):
            assert await refused_status(ws_url(gateway, f"/v2/pty/ws{query}")) == 400
        assert await refused_status(ws_url(gateway, "/v2/pty/sessions/nobody/ws")) == 404


async def test_an_exiting_shell_ends_its_session(gateway: str) -> None:
    with api(gateway) as client:
        data(client.post("/v2/pty/sessions", json={"id": "leaving"}))
        async with connect(ws_url(gateway, "/v2/pty/sessions/leaving/ws")) as socket:
            await frame(socket)
            await socket.send(json.dumps({"type": "input", "data": "exit 7\n"}))
            while (message := await frame(socket))["type"] == "output":
                pass
            assert message == {"type": "exit", "exit_code": 7}
        deadline = time.monotonic() + 10
        while client.get("/v2/pty/sessions/leaving").status_code != 404:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)


# -- limits and guards -------------------------------------------------------------------------


@pytest.fixture
def small_gateway(gateway_settings: GatewaySettings) -> Iterator[str]:
    settings = replace(gateway_settings, pty_max_sessions=2, pty_idle_timeout=1.0)
    with serve_app(build_app(settings)) as url:
        yield url


async def test_the_session_limit_answers_429_and_idle_terminals_are_closed(small_gateway: str) -> None:
    with api(small_gateway) as client:
        data(client.post("/v2/pty/sessions", json={"id": "one"}))
        async with connect(ws_url(small_gateway, "/v2/pty/ws")) as anonymous:
            await frame(anonymous)
            refused = client.post("/v2/pty/sessions", json={"id": "three"})
            assert refused.status_code == 429 and refused.json()["success"] is False
            assert await refused_status(ws_url(small_gateway, "/v2/pty/ws")) == 429
        # "one" was never attached: idle past AIO_PTY_IDLE_TIMEOUT (1 s here), it is closed
        deadline = time.monotonic() + 15
        while client.get("/v2/pty/sessions/one").status_code != 404:
            assert time.monotonic() < deadline, "the idle terminal was not closed"
            await asyncio.sleep(0.1)
        data(client.post("/v2/pty/sessions", json={"id": "three"}))


@pytest.fixture
def keyed_gateway(gateway_settings: GatewaySettings) -> Iterator[str]:
    with serve_app(build_app(replace(gateway_settings, api_key=KEY))) as url:
        yield url


async def test_sockets_need_the_key_and_a_good_origin(keyed_gateway: str) -> None:
    base = keyed_gateway
    with api(base) as anonymous:
        assert anonymous.post("/v2/pty/sessions", json={"id": "k"}).status_code == 401
    with api(base, Authorization=f"Bearer {KEY}") as client:
        data(client.post("/v2/pty/sessions", json={"id": "k"}))
    for path in ("/v2/pty/sessions/k/ws", "/v2/pty/ws", f"/v2/pty/ws?api_key=wrong-{KEY}"):
        assert await refused_status(ws_url(base, path)) == 401
    async with connect(ws_url(base, f"/v2/pty/sessions/k/ws?api_key={KEY}")) as socket:
        assert (await frame(socket))["type"] == "ready"
    async with connect(ws_url(base, "/v2/pty/ws"), additional_headers={"Authorization": f"Bearer {KEY}"}) as socket:
        assert (await frame(socket))["type"] == "ready"
    foreign = await refused_status(ws_url(base, f"/v2/pty/sessions/k/ws?api_key={KEY}"), origin="https://evil.example")
    assert foreign == 403
