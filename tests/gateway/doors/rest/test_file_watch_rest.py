"""``/v1/file/watch*`` through the agent-sandbox SDK (sync and async): a watcher sees files created,
written and removed (inotify, real files), polls from a cursor and long-polls, ``wait`` returns the
first event on one path, the number of watchers is bounded (429); bad input is a 4xx envelope."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from agent_sandbox import AsyncSandbox, Sandbox
from agent_sandbox.core.api_error import ApiError

from agentbox_gateway.settings import GatewaySettings
from tests.support import shared_http

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def client(gateway: str) -> Sandbox:
    return Sandbox(base_url=gateway, timeout=60)


def later(seconds: float, action: object) -> threading.Timer:
    timer = threading.Timer(seconds, action)  # type: ignore[arg-type]
    timer.start()
    return timer


def events_until(client: Sandbox, watcher_id: str, count: int, since: int = 0) -> tuple[list[dict], int]:
    """Long-poll until ``count`` events have arrived after ``since`` (bounded)."""
    found: list[dict] = []
    deadline = time.monotonic() + 10
    while len(found) < count and time.monotonic() < deadline:
        answer = client.file.watch_poll(watcher_id=watcher_id, since=since, timeout=2)["data"]
        found += answer["events"]
        since = answer["cursor"]
    return found, since


def test_a_watcher_sees_files_created_written_and_removed(client: Sandbox, tmp_path: Path) -> None:
    created = client.file.watch_create(path=str(tmp_path), debounce=20)
    assert created["success"] is True
    watcher_id = created["data"]["watcher_id"]
    assert created["data"]["path"] == str(tmp_path.resolve())
    listed = client.file.watch_list()["data"]
    assert [w["watcher_id"] for w in listed["watchers"]] == [watcher_id]

    target = tmp_path / "new.txt"
    target.write_text("one")
    events, cursor = events_until(client, watcher_id, 1)
    assert events[0]["path"] == str(target.resolve()) and events[0]["type"] == "create"

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "deep.txt").write_text("x")
    target.unlink()
    more, cursor = events_until(client, watcher_id, 3, since=cursor)
    seen = {(Path(e["path"]).name, e["type"]) for e in more}
    # a file created at once inside a new directory is reported (as a create, or coalesced into a write)
    assert seen & {("deep.txt", "create"), ("deep.txt", "write")} and ("new.txt", "remove") in seen
    assert all(e["seq"] > events[-1]["seq"] for e in more)

    everything = client.file.watch_events(watcher_id=watcher_id)["data"]
    assert [e["seq"] for e in everything["events"]] == sorted(e["seq"] for e in everything["events"])
    assert everything["cursor"] == cursor

    assert client.file.watch_stop(watcher_id=watcher_id)["data"]["stopped"] is True
    assert client.file.watch_list()["data"]["watchers"] == []


def test_filters_and_a_poll_that_waits(client: Sandbox, tmp_path: Path) -> None:
    (tmp_path / "node_modules").mkdir()
    watcher_id = client.file.watch_create(
        path=str(tmp_path), exclude=["node_modules"], include_patterns=["*.py"], debounce=20
    )["data"]["watcher_id"]
    (tmp_path / "node_modules" / "skip.py").write_text("")
    (tmp_path / "notes.txt").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("")  # in a directory made just now, not yet watched
    first, cursor = events_until(client, watcher_id, 1)
    assert [Path(e["path"]).name for e in first] == ["mod.py"]

    timer = later(0.5, lambda: (tmp_path / "main.py").write_text("print()"))
    started = time.monotonic()
    answer = client.file.watch_poll(watcher_id=watcher_id, since=cursor, timeout=10)["data"]
    timer.join()
    assert 0.3 < time.monotonic() - started < 9
    assert [Path(e["path"]).name for e in answer["events"]] == ["main.py"]
    empty = client.file.watch_poll(watcher_id=watcher_id, since=answer["cursor"], timeout=0)["data"]
    assert empty == {"watcher_id": watcher_id, "events": [], "cursor": answer["cursor"]}


def test_wait_returns_the_first_event_on_one_path(client: Sandbox, tmp_path: Path) -> None:
    target = tmp_path / "done.flag"
    (tmp_path / "other").write_text("")

    def create_once_watched() -> None:
        """Creates the file once the wait's own watcher is listed (it watches from then on): a fixed
        delay loses the race on a loaded machine, where the request may start watching later."""
        deadline = time.monotonic() + 10
        while not client.file.watch_list()["data"]["watchers"] and time.monotonic() < deadline:
            time.sleep(0.02)
        target.write_text("ok")

    creator = threading.Thread(target=create_once_watched)
    creator.start()
    event = client.file.watch_wait(path=str(target), timeout=10, event_types=["create"])["data"]["event"]
    creator.join()
    assert event["path"] == str(target.resolve()) and event["type"] == "create"
    with pytest.raises(ApiError) as late:
        client.file.watch_wait(path=str(tmp_path / "never"), timeout=1)
    assert late.value.status_code == 408
    assert client.file.watch_list()["data"]["watchers"] == []  # wait's own watcher is gone


def test_the_async_client_too(gateway: str, tmp_path: Path) -> None:
    async def scenario() -> list[str]:
        client = AsyncSandbox(base_url=gateway, timeout=60)
        watcher_id = (await client.file.watch_create(path=str(tmp_path), debounce=20))["data"]["watcher_id"]
        await asyncio.to_thread((tmp_path / "a.txt").write_text, "a")
        answer = (await client.file.watch_poll(watcher_id=watcher_id, since=0, timeout=5))["data"]
        await client.file.watch_stop(watcher_id=watcher_id)
        return [Path(e["path"]).name for e in answer["events"]]

    assert asyncio.run(scenario()) == ["a.txt"]


@pytest.fixture
def gateway_settings(gateway_settings: GatewaySettings) -> GatewaySettings:
    return replace(gateway_settings, max_file_watchers=3)


def test_watchers_are_bounded(client: Sandbox, gateway: str, tmp_path: Path) -> None:
    ids = [client.file.watch_create(path=str(tmp_path))["data"]["watcher_id"] for _ in range(3)]
    response = shared_http.post(f"{gateway}/v1/file/watch", json={"path": str(tmp_path)}, timeout=10)
    assert response.status_code == 429 and response.json()["success"] is False
    assert len(client.file.watch_list()["data"]["watchers"]) == 3
    client.file.watch_stop(watcher_id=ids[0])
    assert client.file.watch_create(path=str(tmp_path))["success"] is True


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "/v1/file/watch", {"path": "/no/such/dir"}, 404),
        ("POST", "/v1/file/watch", {"path": "relative/dir"}, 400),
        ("POST", "/v1/file/watch", {"path": "/tmp", "debounce": "fast"}, 422),
        ("POST", "/v1/file/watch", {}, 422),
        ("POST", "/v1/file/watch/nope/poll", {}, 404),
        ("POST", "/v1/file/watch/nope/poll", {"since": -1}, 422),
        ("GET", "/v1/file/watch/nope/events", None, 404),
        ("DELETE", "/v1/file/watch/nope", None, 404),
        ("POST", "/v1/file/watch/wait", {"path": "/no/such/dir/file"}, 404),
        ("POST", "/v1/file/watch/wait", {"path": "/tmp/x", "event_types": ["explode"]}, 422),
    ],
)
def test_bad_input_is_a_4xx_envelope(
    client: Sandbox, gateway: str, method: str, path: str, body: object, status: int
) -> None:
    response = shared_http.request(method, f"{gateway}{path}", json=body, timeout=10)
    assert response.status_code == status, response.text
    assert response.json()["success"] is False
    assert client.file.watch_list()["data"]["watchers"] == []
