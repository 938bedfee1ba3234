"""``/v2/watch`` driven as AIO's documentation describes it (basic/file.mdx "Watch a directory",
examples/file-ops.mdx), with httpx against a real gateway: events polled by cursor across 1,000
writes with none lost or duplicated, ``overflow`` once the ring dropped events, the long poll and
its timeout, the SSE stream resumed with ``Last-Event-ID``, a create with the same options reusing
the watcher, 429 at the watcher limit, the API key, and bad input refused with nothing started."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support.servers import serve_app
from tests.support.sse import sse_messages
from tests.support.v2 import gateway_client, v2_data

pytestmark = pytest.mark.timeout(120)

KEY = "v2-watch-test-key"


@pytest.fixture
def api(gateway: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway, timeout=30) as client:
        yield client


GatewayWith = Callable[..., httpx.Client]


@pytest.fixture
def gateway_with(gateway_settings: GatewaySettings) -> Iterator[GatewayWith]:
    """Clients on gateways of their own, each with the settings a test changes (its limits)."""
    with contextlib.ExitStack() as stack:

        def client(**changes: Any) -> httpx.Client:
            return stack.enter_context(gateway_client(replace(gateway_settings, **changes)))

        yield client


def create(api: httpx.Client, path: Path, **options: Any) -> dict[str, Any]:
    return v2_data(api.post("/v2/watch", json={"path": str(path), **options}))


def poll(api: httpx.Client, watcher_id: str, **params: Any) -> dict[str, Any]:
    return v2_data(api.get(f"/v2/watch/{watcher_id}/poll", params=params))


def watchers(api: httpx.Client) -> list[dict[str, Any]]:
    return v2_data(api.get("/v2/watch"))["watchers"]


def drain(api: httpx.Client, watcher_id: str, cursor: int) -> tuple[list[dict[str, Any]], int]:
    """Every event after ``cursor`` until a one-second poll brings nothing (bounded)."""
    found: list[dict[str, Any]] = []
    for _ in range(200):
        page = poll(api, watcher_id, cursor=cursor, timeout=1, limit=1000)
        if not page["events"]:
            return found, cursor
        found += page["events"]
        cursor = page["cursor"]
    raise AssertionError("the watcher never went quiet")


def test_the_documented_example(api: httpx.Client, tmp_path: Path) -> None:
    """basic/file.mdx: a command writes a file, a poll from cursor 0 returns its create (then write)."""
    created = create(api, tmp_path, recursive=True, debounce=200)
    assert created["reused"] is False and created["initial_cursor"] == 0
    assert created["path"] == str(tmp_path.resolve()) and created["debounce"] == 200
    watcher = created["watcher_id"]
    subprocess.run(["bash", "-c", f"echo 'X = 1' > {tmp_path}/util.py"], check=True)

    polled = poll(api, watcher, cursor=0, timeout=10)
    first = polled["events"][0]
    assert (first["seq"], first["type"], first["relative_path"]) == (1, "create", "util.py")
    assert {e["type"] for e in polled["events"]} <= {"create", "write"}
    assert polled["cursor"] == polled["events"][-1]["seq"] and polled["overflow"] is False
    info = os.stat(tmp_path / "util.py")
    assert first["path"] == str((tmp_path / "util.py").resolve())
    assert first["is_dir"] is False and first["inode"] == info.st_ino and first["old_path"] is None
    assert isinstance(first["timestamp"], float) and isinstance(first["mtime"], float)
    assert v2_data(api.delete(f"/v2/watch/{watcher}")) == {"watcher_id": watcher, "stopped": True, "subscribers": 0}
    assert watchers(api) == []


def test_a_thousand_writes_polled_by_cursor_lose_and_repeat_nothing(api: httpx.Client, tmp_path: Path) -> None:
    watcher = create(api, tmp_path, debounce=50)
    names = [f"f{i:04}.txt" for i in range(1000)]

    def write_all() -> None:
        for number, name in enumerate(names):
            (tmp_path / name).write_text(f"{number}\n")

    writer = threading.Thread(target=write_all)
    writer.start()
    events: list[dict[str, Any]] = []
    cursor = watcher["initial_cursor"]
    deadline = time.monotonic() + 90
    created: set[str] = set()
    while created != set(names) and time.monotonic() < deadline:
        page = poll(api, watcher["watcher_id"], cursor=cursor, limit=37, timeout=5)  # pages cut across batches
        assert page["overflow"] is False
        assert len(page["events"]) <= 37
        events += page["events"]
        created |= {e["relative_path"] for e in page["events"] if e["type"] == "create"}
        cursor = page["cursor"]
    writer.join()
    rest, cursor = drain(api, watcher["watcher_id"], cursor)
    events += rest

    assert created == set(names)
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(events) + 1))  # in order, none skipped, none twice
    creates = [e["relative_path"] for e in events if e["type"] == "create"]
    assert sorted(creates) == names  # each file's creation exactly once
    assert {e["type"] for e in events} <= {"create", "write"}
    listed = next(w for w in watchers(api) if w["watcher_id"] == watcher["watcher_id"])
    assert listed["event_count"] == len(events) == cursor


def test_overflow_says_events_were_dropped_before_they_were_read(gateway_with: GatewayWith, tmp_path: Path) -> None:
    api = gateway_with(watch_events_kept=10)
    watcher = create(api, tmp_path, debounce=50)["watcher_id"]
    for i in range(25):
        (tmp_path / f"n{i:02}").write_text("x")
    _, total = drain(api, watcher, 0)
    assert total >= 25

    replayed = poll(api, watcher, cursor=0, limit=1000)
    assert replayed["overflow"] is True
    assert [e["seq"] for e in replayed["events"]] == list(range(total - 9, total + 1))  # the ring: the last 10
    assert replayed["cursor"] == total
    assert poll(api, watcher, cursor=total - 10)["overflow"] is False  # nothing after it was dropped
    assert poll(api, watcher, cursor=total - 11)["overflow"] is True
    assert poll(api, watcher, cursor=total) == {
        "watcher_id": watcher,
        "events": [],
        "cursor": total,
        "overflow": False,
        "stopped": False,
    }

    with api.stream("GET", f"/v2/watch/{watcher}/events") as stream:
        received = sse_messages(stream)
        assert next(received)[0] == "watch_started"
        kind, _, said = next(received)
        assert kind == "overflow" and said["oldest_seq"] == total - 9
        kind, event_id, event = next(received)
        assert kind == "file_change" and event_id == f"{watcher}:{total - 9}" and event["seq"] == total - 9


def test_a_long_poll_waits_for_the_next_event_or_its_timeout(api: httpx.Client, tmp_path: Path) -> None:
    watcher = create(api, tmp_path, debounce=50)
    cursor = watcher["initial_cursor"]
    started = time.monotonic()
    quiet = poll(api, watcher["watcher_id"], cursor=cursor, timeout=1)
    assert 0.9 <= time.monotonic() - started < 5
    assert quiet["events"] == [] and quiet["cursor"] == cursor and quiet["overflow"] is False

    timer = threading.Timer(0.5, lambda: (tmp_path / "late.txt").write_text("late"))
    timer.start()
    started = time.monotonic()
    woken = poll(api, watcher["watcher_id"], cursor=cursor, timeout=30)
    timer.join()
    assert 0.4 < time.monotonic() - started < 20
    assert woken["events"][0]["relative_path"] == "late.txt" and woken["cursor"] > cursor
    started = time.monotonic()
    poll(api, watcher["watcher_id"], cursor=woken["cursor"], timeout=0)  # timeout 0: answers at once
    assert time.monotonic() - started < 0.9


def until_file(received: Iterator[tuple[str, str | None, dict[str, Any]]], name: str) -> list[tuple[str, dict]]:
    """The ``file_change`` events read until one for ``name`` (with their ids)."""
    changes: list[tuple[str, dict]] = []
    for kind, event_id, event in received:
        if kind == "file_change":
            assert event_id is not None
            changes.append((event_id, event))
            if event["relative_path"] == name:
                return changes
    raise AssertionError(f"the stream ended before {name}")


def test_the_event_stream_resumes_from_last_event_id(api: httpx.Client, tmp_path: Path) -> None:
    watcher = create(api, tmp_path, debounce=50)["watcher_id"]
    with api.stream("GET", f"/v2/watch/{watcher}/events", headers={"Accept": "text/event-stream"}) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        received = sse_messages(stream)
        kind, _, started = next(received)
        assert kind == "watch_started" and started["watcher_id"] == watcher
        (tmp_path / "a.txt").write_text("a")
        first = until_file(received, "a.txt")
        (tmp_path / "b.txt").write_text("b")
        second = until_file(received, "b.txt")
    seen = first + second
    for event_id, event in seen:
        assert event_id == f"{watcher}:{event['seq']}"
    assert [e["seq"] for _, e in seen] == list(range(1, len(seen) + 1))
    last_id, last = seen[-1]

    (tmp_path / "c.txt").write_text("c")  # while nobody listens
    missed = poll(api, watcher, cursor=last["seq"], timeout=10)["events"]
    assert missed and missed[0]["relative_path"] in ("b.txt", "c.txt")

    with api.stream("GET", f"/v2/watch/{watcher}/events", headers={"Last-Event-ID": last_id}) as stream:
        received = sse_messages(stream)
        assert next(received)[0] == "watch_started"
        resumed = until_file(received, "c.txt")
    assert resumed[0][1]["seq"] == last["seq"] + 1  # neither replayed from the start nor a gap
    assert [e["seq"] for _, e in resumed] == list(range(last["seq"] + 1, last["seq"] + 1 + len(resumed)))

    with api.stream(
        "GET", f"/v2/watch/{watcher}/poll", params={"cursor": last["seq"]}, headers={"Accept": "text/event-stream"}
    ) as stream:
        received = sse_messages(stream)
        assert next(received)[0] == "watch_started"
        assert until_file(received, "c.txt")[0][1]["seq"] == last["seq"] + 1

    other = api.get(f"/v2/watch/{watcher}/events", headers={"Last-Event-ID": "someoneelse:3"})
    assert other.status_code == 400 and other.json()["success"] is False

    with api.stream("GET", f"/v2/watch/{watcher}/events", params={"cursor": seen[-1][1]["seq"]}) as stream:
        received = sse_messages(stream)
        assert next(received)[0] == "watch_started"
        api.delete(f"/v2/watch/{watcher}")
        assert [kind for kind, _, _ in received][-1] == "watch_stopped"  # the stream ends with the watcher


def test_the_same_options_reuse_the_watcher(api: httpx.Client, tmp_path: Path) -> None:
    first = create(api, tmp_path, debounce=100, include_patterns=["*.py"])
    (tmp_path / "one.py").write_text("1")
    _, cursor = drain(api, first["watcher_id"], 0)
    assert cursor > 0

    again = create(api, tmp_path, debounce=100, include_patterns=["*.py"])
    assert again["watcher_id"] == first["watcher_id"] and again["reused"] is True
    assert again["initial_cursor"] == cursor and again["subscribers"] == 2
    other = create(api, tmp_path, debounce=100)  # other options: another watcher
    assert other["watcher_id"] != first["watcher_id"] and other["reused"] is False
    assert len(watchers(api)) == 2

    released = v2_data(api.delete(f"/v2/watch/{first['watcher_id']}"))
    assert released == {"watcher_id": first["watcher_id"], "stopped": False, "subscribers": 1}
    (tmp_path / "two.py").write_text("2")  # the remaining subscriber still gets events
    assert poll(api, first["watcher_id"], cursor=cursor, timeout=10)["events"][0]["relative_path"] == "two.py"
    assert v2_data(api.delete(f"/v2/watch/{first['watcher_id']}"))["stopped"] is True
    assert [w["watcher_id"] for w in watchers(api)] == [other["watcher_id"]]
    gone = api.get(f"/v2/watch/{first['watcher_id']}/poll")
    assert gone.status_code == 404 and gone.json()["success"] is False


def test_filters_default_exclude_and_its_replacement(api: httpx.Client, tmp_path: Path) -> None:
    for folder in ("node_modules", ".git", "src"):
        (tmp_path / folder).mkdir()
    default = create(api, tmp_path, debounce=50)
    assert ".git" in default["exclude"] and "node_modules" in default["exclude"]
    everything = create(api, tmp_path, debounce=50, exclude=[])
    parts = create(api, tmp_path, debounce=50, exclude=["*.part"])
    for relative in ("node_modules/dep.js", ".git/HEAD", "src/main.py", "src/up.part"):
        (tmp_path / relative).write_text("x")

    def names(watcher: dict[str, Any]) -> set[str]:
        return {e["relative_path"] for e in drain(api, watcher["watcher_id"], 0)[0]}

    assert names(default) == {"src/main.py", "src/up.part"}
    assert names(everything) == {"node_modules/dep.js", ".git/HEAD", "src/main.py", "src/up.part"}
    assert names(parts) == {"node_modules/dep.js", ".git/HEAD", "src/main.py"}


def test_429_at_the_watcher_limit(gateway_with: GatewayWith, tmp_path: Path) -> None:
    api = gateway_with(max_file_watchers=2)
    first = create(api, tmp_path, debounce=100)
    create(api, tmp_path, debounce=200)
    full = api.post("/v2/watch", json={"path": str(tmp_path), "debounce": 300})
    assert full.status_code == 429 and full.json()["success"] is False
    assert "limit" in full.json()["message"]
    assert create(api, tmp_path, debounce=100)["reused"] is True  # a reuse starts nothing: served at the limit
    assert len(watchers(api)) == 2
    api.delete(f"/v2/watch/{first['watcher_id']}")
    api.delete(f"/v2/watch/{first['watcher_id']}")
    assert create(api, tmp_path, debounce=300)["reused"] is False


@pytest.fixture
def keyed(gateway_settings: GatewaySettings) -> Iterator[str]:
    with serve_app(build_app(replace(gateway_settings, api_key=KEY))) as url:
        yield url


def test_the_api_key_guards_every_route(keyed: str, tmp_path: Path) -> None:
    with httpx.Client(base_url=keyed, timeout=30, headers={"Authorization": f"Bearer {KEY}"}) as api:
        watcher = create(api, tmp_path)["watcher_id"]
        assert [w["watcher_id"] for w in watchers(api)] == [watcher]
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        with httpx.Client(base_url=keyed, timeout=30, headers=headers) as stranger:
            for method, path in (
                ("POST", "/v2/watch"),
                ("GET", "/v2/watch"),
                ("GET", f"/v2/watch/{watcher}/poll"),
                ("GET", f"/v2/watch/{watcher}/events"),
                ("DELETE", f"/v2/watch/{watcher}"),
            ):
                answer = stranger.request(method, path, json={"path": str(tmp_path)} if method == "POST" else None)
                assert answer.status_code == 401, (method, path, answer.text)
    with httpx.Client(base_url=keyed, timeout=30, headers={"x-api-key": KEY}) as api:
        assert [w["watcher_id"] for w in watchers(api)] == [watcher]  # still there, still one


@pytest.mark.parametrize(
    ("method", "path", "params", "body", "status"),
    [
        ("POST", "/v2/watch", None, {"path": "relative/dir"}, 400),
        ("POST", "/v2/watch", None, {"path": "/no/such/dir"}, 404),
        ("POST", "/v2/watch", None, {"path": "/tmp", "debounce": 10}, 400),
        ("POST", "/v2/watch", None, {"path": "/tmp", "debounce": 6000}, 400),
        ("POST", "/v2/watch", None, {"path": "/tmp", "debounce": "fast"}, 422),
        ("POST", "/v2/watch", None, {"path": "/tmp", "unknown": 1}, 422),
        ("POST", "/v2/watch", None, {}, 422),
        ("GET", "/v2/watch/nope/poll", None, None, 404),
        ("GET", "/v2/watch/nope/events", None, None, 404),
        ("DELETE", "/v2/watch/nope", None, None, 404),
        ("GET", "/v2/watch/{id}/poll", {"limit": 0}, None, 400),
        ("GET", "/v2/watch/{id}/poll", {"limit": 1001}, None, 400),
        ("GET", "/v2/watch/{id}/poll", {"timeout": 61}, None, 400),
        ("GET", "/v2/watch/{id}/poll", {"cursor": -1}, None, 422),
        ("GET", "/v2/watch/{id}/poll", {"cursor": 5}, None, 400),  # past the last event: not handed out
        ("GET", "/v2/watch/{id}/events", {"cursor": 5}, None, 400),
    ],
)
def test_bad_input_is_refused_and_starts_nothing(
    module_gateway: str, tmp_path: Path, method: str, path: str, params: Any, body: Any, status: int
) -> None:
    with httpx.Client(base_url=module_gateway, timeout=30) as api:
        watcher = create(api, tmp_path)["watcher_id"]
        try:
            answer = api.request(method, path.replace("{id}", watcher), params=params, json=body)
            assert answer.status_code == status, answer.text
            assert answer.json()["success"] is False
            assert [w["watcher_id"] for w in watchers(api)] == [watcher]
            assert poll(api, watcher)["cursor"] == 0
        finally:
            api.delete(f"/v2/watch/{watcher}")
