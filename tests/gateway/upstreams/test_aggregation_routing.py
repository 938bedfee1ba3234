"""The upstream router against real upstream servers on loopback: naming, collisions, routing,
upstreams coming and going, hanging and slow upstreams, pagination, JSON and SSE answers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from agentbox_gateway.settings import GatewaySettings
from agentbox_gateway.upstreams import UpstreamRouter
from agentbox_gateway.upstreams.client import MAX_LIST_PAGES
from tests.gateway.upstreams.test_aggregation_fakes import (
    crashing_upstream,
    handwritten_sse_upstream,
    hanging_upstream,
    make_router,
    once_per_connection_upstream,
    read_request,
    sdk_sse_upstream,
    tool,
    upstream_app,
    upstream_process,
)
from tests.support.servers import free_port, serve_app

pytestmark = pytest.mark.anyio

ROUTER_LOG = "agentbox_gateway.upstreams.router"


@contextlib.asynccontextmanager
async def router(
    servers: dict[str, Any],
    *,
    list_timeout: float = 2.0,
    call_timeout: float = 10.0,
    list_cache_ttl: float = GatewaySettings.upstream_list_cache_ttl,
) -> AsyncIterator[UpstreamRouter]:
    upstreams = make_router(
        servers, list_timeout=list_timeout, call_timeout=call_timeout, list_cache_ttl=list_cache_ttl
    )
    try:
        yield upstreams
    finally:
        await upstreams.aclose()


async def names(upstreams: UpstreamRouter, reserved: set[str] | None = None) -> list[str]:
    return [t.name for t in await upstreams.list_tools(reserved or set())]


async def call_text(upstreams: UpstreamRouter, name: str, arguments: dict[str, Any] | None = None) -> str:
    result = await upstreams.call_tool(name, arguments or {})
    assert result is not None, name
    return result.content[0].text


def dead_url() -> str:
    """A loopback URL nothing listens on."""
    return f"http://127.0.0.1:{free_port()}/mcp"


async def test_prefix_is_added_for_listing_and_removed_for_calls() -> None:
    with serve_app(upstream_app("peer", [tool("sandbox_execute_bash"), tool("hello")])) as peer:
        async with router({"peer": {"url": f"{peer}/mcp", "prefix": "peer"}}) as upstreams:
            assert await names(upstreams) == ["peer_sandbox_execute_bash", "peer_hello"]
            text = await call_text(upstreams, "peer_hello", {"x": 1})
            assert text == 'peer:hello:{"x": 1}'


async def test_without_prefix_only_tools_named_after_the_entry_are_kept(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=ROUTER_LOG)
    tools = [tool("browser_navigate"), tool("navigate"), tool("browser_"), tool("browserless"), tool("browser_click")]
    with serve_app(upstream_app("b", tools)) as url:
        async with router({"browser": {"url": f"{url}/mcp"}}) as upstreams:
            assert await names(upstreams) == ["browser_navigate", "browser_click"]
            assert await names(upstreams) == ["browser_navigate", "browser_click"]
            assert await call_text(upstreams, "browser_click") == "b:browser_click:{}"
    dropped = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert len(dropped) == 3, dropped  # navigate, browser_, browserless: once each over two listings
    assert any("'navigate'" in line and "'browser_'" in line for line in dropped)


async def test_builtin_names_win_and_the_first_registered_upstream_keeps_a_name() -> None:
    first = upstream_app("first", [tool("one"), tool("builtin"), tool("shared")])
    second = upstream_app("second", [tool("shared"), tool("two")])
    third = upstream_app("third", [tool("x_one"), tool("x_three")])
    with serve_app(first) as a, serve_app(second) as b, serve_app(third) as c:
        config = {
            "first": {"url": f"{a}/mcp", "prefix": "x"},
            "second": {"url": f"{b}/mcp", "prefix": "x"},
            "x": {"url": f"{c}/mcp"},
        }
        async with router(config) as upstreams:
            assert await names(upstreams, {"x_builtin"}) == ["x_one", "x_shared", "x_two", "x_three"]
            # The table routes each name to the upstream that won it.
            assert await call_text(upstreams, "x_shared") == "first:shared:{}"
            assert await call_text(upstreams, "x_two") == "second:two:{}"
            assert await call_text(upstreams, "x_one") == "first:one:{}"
            assert await call_text(upstreams, "x_three") == "third:x_three:{}"


async def test_upstreams_are_listed_in_registration_order_not_answer_order() -> None:
    first = upstream_app("a", [tool("a1"), tool("a2")])

    async def slower_first(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await asyncio.sleep(0.3)
        await first(scope, receive, send)

    with serve_app(slower_first) as a, serve_app(upstream_app("b", [tool("b1")])) as b:
        config = {"zeta": {"url": f"{a}/mcp", "prefix": "z"}, "alpha": {"url": f"{b}/mcp", "prefix": "a"}}
        async with router(config) as upstreams:
            assert await names(upstreams) == ["z_a1", "z_a2", "a_b1"]


async def test_unknown_names_are_left_to_the_door() -> None:
    with serve_app(upstream_app("peer", [tool("hello")])) as peer:
        async with router({"peer": {"url": f"{peer}/mcp", "prefix": "peer"}}) as upstreams:
            await upstreams.list_tools(set())
            assert await upstreams.call_tool("nobody_hello", {}) is None
            assert await upstreams.call_tool("peer", {}) is None
            assert await upstreams.call_tool("peer_", {}) is None


async def test_a_down_upstream_is_absent_and_a_call_to_it_is_an_error_result() -> None:
    with serve_app(upstream_app("peer", [tool("hello")])) as peer:
        config = {"peer": {"url": f"{peer}/mcp", "prefix": "peer"}, "gone": {"url": dead_url(), "prefix": "gone"}}
        async with router(config) as upstreams:
            started = time.monotonic()
            assert await names(upstreams) == ["peer_hello"]
            assert time.monotonic() - started < 1.5
            result = await upstreams.call_tool("gone_hello", {})
            assert result is not None and result.is_error
            assert result.content[0].text == "upstream gone unavailable: connection refused"


async def test_an_upstream_started_later_appears_on_the_next_list() -> None:
    port = free_port()
    config = {"late": {"url": f"http://127.0.0.1:{port}/mcp", "prefix": "late"}}
    async with router(config) as upstreams:
        assert await names(upstreams) == []
        with serve_app(upstream_app("late", [tool("hello")]), port=port):
            assert await names(upstreams) == ["late_hello"]
            assert await call_text(upstreams, "late_hello") == "late:hello:{}"


async def test_an_upstream_killed_then_restarted_leaves_and_comes_back(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=ROUTER_LOG)
    port = free_port()
    config = {"peer": {"url": f"http://127.0.0.1:{port}/mcp", "prefix": "peer"}}
    async with router(config) as upstreams:
        with serve_app(upstream_app("v1", [tool("hello")]), port=port):
            assert await names(upstreams) == ["peer_hello"]
            assert await call_text(upstreams, "peer_hello") == "v1:hello:{}"
        # Killed: a call (still in the routing table) is an isError result, and the failure drops
        # the upstream's cached list: the next listing asks it, and leaves its tools out.
        result = await upstreams.call_tool("peer_hello", {})
        assert result is not None and result.is_error
        assert result.content[0].text == "upstream peer unavailable: connection refused"
        assert await names(upstreams) == []
        with serve_app(upstream_app("v2", [tool("hello"), tool("bye")]), port=port):
            assert await names(upstreams) == ["peer_hello", "peer_bye"]
            assert await call_text(upstreams, "peer_hello") == "v2:hello:{}"
    messages = [r.getMessage() for r in caplog.records if r.name == ROUTER_LOG]
    assert messages.count("upstream peer unavailable: connection refused") == 1  # logged on the change only
    assert "upstream peer answers: 2 tools" in messages


async def test_an_upstream_dying_mid_call_is_an_error_result_and_the_call_is_not_sent_again() -> None:
    requests: list[dict[str, Any]] = []
    async with crashing_upstream(requests) as url:
        async with router({"peer": {"url": url, "prefix": "peer"}}) as upstreams:
            result = await upstreams.call_tool("peer_hello", {})
            assert result is not None and result.is_error
            assert result.content[0].text.startswith("upstream peer unavailable: connection closed")
    assert [r["params"]["name"] for r in requests] == ["hello"]


async def test_a_kept_alive_connection_the_upstream_closed_is_replaced_without_a_failed_call() -> None:
    answered: list[dict[str, Any]] = []
    async with once_per_connection_upstream(answered) as url:
        async with router({"peer": {"url": url, "prefix": "peer"}}) as upstreams:
            assert await call_text(upstreams, "peer_a") == "call 1"
            # The second call finds its kept-alive connection closed unread and goes out on a new one.
            assert await call_text(upstreams, "peer_b") == "call 2"
            assert await call_text(upstreams, "peer_c") == "call 3"
    assert [r["params"]["name"] for r in answered] == ["a", "b", "c"]


async def test_a_hanging_upstream_never_holds_tools_list_beyond_the_bound() -> None:
    with serve_app(upstream_app("peer", [tool("hello")])) as peer:
        async with hanging_upstream() as hang:
            config = {"hang": {"url": hang, "prefix": "hang"}, "peer": {"url": f"{peer}/mcp", "prefix": "peer"}}
            async with router(config, list_timeout=0.5, call_timeout=0.8) as upstreams:
                for _ in range(2):
                    started = time.monotonic()
                    assert await names(upstreams) == ["peer_hello"]
                    assert 0.45 <= time.monotonic() - started < 1.2
                started = time.monotonic()
                hung, quick = await asyncio.gather(
                    upstreams.call_tool("hang_x", {}), upstreams.call_tool("peer_hello", {})
                )
                assert quick is not None and not quick.is_error
                assert hung is not None and hung.is_error
                assert hung.content[0].text == "upstream hang unavailable: no answer within 0.8 s"
                assert time.monotonic() - started < 2


async def test_a_slow_call_does_not_block_other_calls() -> None:
    async def handler(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(float(arguments.get("sleep", 0)))
        return {"content": [{"type": "text", "text": name}]}

    with serve_app(upstream_app("p", [tool("slow"), tool("fast")], handler=handler)) as peer:
        async with router({"p": {"url": f"{peer}/mcp", "prefix": "p"}}) as upstreams:
            slow = asyncio.create_task(upstreams.call_tool("p_slow", {"sleep": 1.5}))
            await asyncio.sleep(0.1)
            started = time.monotonic()
            for _ in range(5):
                assert await call_text(upstreams, "p_fast") == "fast"
            assert time.monotonic() - started < 1.0
            assert not slow.done()
            assert (await slow).content[0].text == "slow"


async def test_a_slow_upstream_keeps_its_last_good_list_but_a_refused_one_does_not() -> None:
    slow = asyncio.Event()

    port = free_port()
    app = upstream_app("s", [tool("hello")])
    config = {"s": {"url": f"http://127.0.0.1:{port}/mcp", "prefix": "s"}}

    async def gate(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and slow.is_set():
            await asyncio.sleep(1)
        await app(scope, receive, send)

    async with router(config, list_timeout=0.4, list_cache_ttl=0) as upstreams:
        with serve_app(gate, port=port):
            assert await names(upstreams) == ["s_hello"]
            slow.set()
            started = time.monotonic()
            assert await names(upstreams) == ["s_hello"]
            assert time.monotonic() - started < 1.0
        assert await names(upstreams) == []


async def test_tool_lists_are_reused_until_a_call_fails_or_they_age() -> None:
    tools = [tool("hello")]
    with serve_app(upstream_app("v", tools)) as peer:
        async with router({"peer": {"url": f"{peer}/mcp", "prefix": "peer"}}, list_cache_ttl=0.5) as upstreams:
            assert await names(upstreams) == ["peer_hello"]
            tools.append(tool("new"))
            assert await names(upstreams) == ["peer_hello"]  # not asked again
            with pytest.raises(MCPError):  # the upstream's JSON-RPC error: its list may have changed
                await upstreams.call_tool("peer_missing", {})
            assert await names(upstreams) == ["peer_hello", "peer_new"]
            tools.append(tool("newer"))
            assert await names(upstreams) == ["peer_hello", "peer_new"]
            await asyncio.sleep(0.6)
            assert await names(upstreams) == ["peer_hello", "peer_new", "peer_newer"]


async def test_a_killed_upstream_leaves_a_cached_list_at_once() -> None:
    port = free_port()
    config = {"peer": {"url": f"http://127.0.0.1:{port}/mcp", "prefix": "peer"}}
    async with router(config, list_cache_ttl=60) as upstreams:
        with upstream_process(port, "v1", ["hello"]) as process:
            assert await names(upstreams) == ["peer_hello"]
            assert await names(upstreams) == ["peer_hello"]  # served from the cache
            process.kill()
            process.wait()
            # Well within the TTL, and with no call made in between: absent, as the seed says.
            assert await names(upstreams) == []
        with upstream_process(port, "v2", ["hello", "bye"]):
            assert await names(upstreams) == ["peer_hello", "peer_bye"]


async def test_a_failed_call_drops_the_cached_list_of_an_upstream_still_reachable() -> None:
    broken = asyncio.Event()
    tools = [tool("hello")]
    app = upstream_app("v", tools)

    async def gate(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and broken.is_set():
            await send({"type": "http.response.start", "status": 500, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    with serve_app(gate) as peer:
        async with router({"peer": {"url": f"{peer}/mcp", "prefix": "peer"}}, list_cache_ttl=60) as upstreams:
            assert await names(upstreams) == ["peer_hello"]
            broken.set()
            result = await upstreams.call_tool("peer_hello", {})
            assert result is not None and result.is_error
            assert result.content[0].text == "upstream peer unavailable: HTTP 500"
            # Still accepting connections, but the failed call drops its list: the next listing
            # asks it, and it is absent while it fails.
            assert await names(upstreams) == []
            broken.clear()
            tools.append(tool("bye"))
            assert await names(upstreams) == ["peer_hello", "peer_bye"]


async def test_pages_are_drained_in_order() -> None:
    tools = [tool(f"t{i}") for i in range(7)]
    with serve_app(upstream_app("p", tools, page_size=3)) as peer:
        async with router({"p": {"url": f"{peer}/mcp", "prefix": "p"}}) as upstreams:
            assert await names(upstreams) == [f"p_t{i}" for i in range(7)]


async def test_an_endless_cursor_chain_is_capped() -> None:
    tools = [tool(f"t{i}") for i in range(MAX_LIST_PAGES + 10)]
    with serve_app(upstream_app("p", tools, page_size=1)) as peer:
        async with router({"p": {"url": f"{peer}/mcp", "prefix": "p"}}) as upstreams:
            assert await names(upstreams) == [f"p_t{i}" for i in range(MAX_LIST_PAGES)]


async def test_invalid_tool_definitions_are_dropped_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=ROUTER_LOG)
    tools = [tool("ok"), {"name": "no_schema"}, {"description": "nameless", "inputSchema": {"type": "object"}}]
    with serve_app(handwritten_sse_upstream(tools)) as peer:
        async with router({"p": {"url": f"{peer}/mcp", "prefix": "p"}}) as upstreams:
            assert await names(upstreams) == ["p_ok"]
            assert await names(upstreams) == ["p_ok"]
    dropped = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert len(dropped) == 2 and "'no_schema'" in dropped[0], dropped


async def test_the_official_sdk_answering_over_sse() -> None:
    with serve_app(sdk_sse_upstream()) as url:
        async with router({"sse": {"url": f"{url}/mcp"}}) as upstreams:
            assert await names(upstreams) == ["sse_add", "sse_echo"]
            result = await upstreams.call_tool("sse_add", {"a": 2, "b": 40})
            assert result is not None and not result.is_error
            assert result.content[0].text == "42" and result.structured_content == {"result": 42}
            assert await call_text(upstreams, "sse_echo", {"text": "hi"}) == "echo: hi"


async def test_a_handwritten_sse_answer_with_notifications_and_multiline_data() -> None:
    with serve_app(handwritten_sse_upstream([tool("x")])) as url:
        async with router({"h": {"url": f"{url}/mcp", "prefix": "h"}}) as upstreams:
            assert await names(upstreams) == ["h_x"]
            result = await upstreams.call_tool("h_x", {})
            assert result is not None and result.structured_content == {"n": 1}
            assert result.content[0].text == "from sse ✓"


async def test_an_upstream_answering_garbage_is_absent_and_calls_are_error_results() -> None:
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    async def endpoint(request: Any) -> PlainTextResponse:
        return PlainTextResponse("not mcp", status_code=503)

    with serve_app(Starlette(routes=[Route("/mcp", endpoint, methods=["POST"])])) as url:
        async with router({"junk": {"url": f"{url}/mcp", "prefix": "junk"}}) as upstreams:
            assert await names(upstreams) == []
            result = await upstreams.call_tool("junk_x", {})
            assert result is not None and result.is_error
            assert result.content[0].text == "upstream junk unavailable: HTTP 503"


async def test_a_check_connection_the_upstream_answered_is_not_taken_for_a_live_one() -> None:
    """A server that times out an idle connection (a 408, then its close, as agentbox's own programs do)
    leaves unread bytes before the close: the check connects again rather than trust that connection."""
    writers: list[asyncio.StreamWriter] = []
    listing = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": [tool("hello")]}}).encode()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                try:
                    request = await asyncio.wait_for(read_request(reader), 0.2)
                except TimeoutError:
                    writer.write(b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
                    break
                body = listing.replace(b'"id": 1', f'"id": {json.dumps(request["id"])}'.encode())
                head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                writer.write(head.encode() + body)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/mcp"
    async with router({"peer": {"url": url, "prefix": "peer"}}, list_cache_ttl=60) as upstreams:
        try:
            assert await names(upstreams) == ["peer_hello"]
            assert await names(upstreams) == ["peer_hello"]  # cached; the check's connection opened
            await asyncio.sleep(0.5)  # the server has answered that connection with a 408 and closed it
        finally:
            server.close()
            for writer in writers:
                writer.transport.abort()
            await server.wait_closed()
        assert await names(upstreams) == []  # gone: not served from the cache
