"""``/v2/watch`` in the image, as AIO's file-ops example drives it: a watcher on a workspace folder,
a command in the sandbox writing files, the events polled by cursor and streamed as SSE resumed with
``Last-Event-ID``, the same options reusing the watcher, and the key guarding it all."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.jsonrpc import call_tool
from tests.support.sse import sse_messages

from .dockerbox import Box

pytestmark = pytest.mark.docker

FOLDER = "/workspace/watch-e2e"


def run(box: Box, auth: dict[str, str], command: str) -> None:
    result = call_tool(box.url(8091, "/mcp"), "sandbox_execute_bash", {"cmd": command}, headers=auth)
    assert result["isError"] is False, result


def change_events(response: httpx.Response) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(id, data)`` of each ``file_change`` Server-Sent Event (each carries the id to resume from)."""
    for event, event_id, data in sse_messages(response):
        if event == "file_change":
            assert event_id is not None, data
            yield event_id, data


def test_a_watcher_in_the_image(box: Box, auth: dict[str, str]) -> None:
    run(box, auth, f"mkdir -p {FOLDER}")
    with httpx.Client(base_url=box.url(8091), headers=auth, timeout=30) as api:
        assert httpx.get(box.url(8091, "/v2/watch"), timeout=10).status_code == 401
        created = api.post("/v2/watch", json={"path": FOLDER, "recursive": True, "debounce": 100}).json()["data"]
        watcher, cursor = created["watcher_id"], created["initial_cursor"]
        again = api.post("/v2/watch", json={"path": FOLDER, "recursive": True, "debounce": 100}).json()["data"]
        assert again["watcher_id"] == watcher and again["reused"] is True

        run(box, auth, f"echo 'X = 1' > {FOLDER}/util.py")
        page = api.get(f"/v2/watch/{watcher}/poll", params={"cursor": cursor, "timeout": 10}).json()["data"]
        first = page["events"][0]
        assert (first["type"], first["relative_path"]) == ("create", "util.py") and page["overflow"] is False

        with api.stream("GET", f"/v2/watch/{watcher}/events", params={"cursor": page["cursor"]}) as stream:
            received = change_events(stream)
            run(box, auth, f"mkdir -p {FOLDER}/src && echo done > {FOLDER}/src/build.done")
            last_id, event = next(received)
            while event["relative_path"] != "src/build.done":
                last_id, event = next(received)
        run(box, auth, f"rm {FOLDER}/util.py")
        with api.stream("GET", f"/v2/watch/{watcher}/events", headers={"Last-Event-ID": last_id}) as stream:
            resumed_id, resumed = next(change_events(stream))
        assert resumed_id == f"{watcher}:{int(last_id.rpartition(':')[2]) + 1}"
        assert resumed["seq"] > event["seq"]
        assert api.delete(f"/v2/watch/{watcher}").json()["data"]["stopped"] is False
        assert api.delete(f"/v2/watch/{watcher}").json()["data"]["stopped"] is True
