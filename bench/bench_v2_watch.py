"""Watcher event latency: a file written → its event at the client, through ``/v2/watch`` (a long
poll, and the SSE stream) beside ``/v1/file/watch``'s long poll, in one gateway (``aiod start``),
each watcher on a directory of its own with the same debounce (50 ms), rounds interleaved.

A long poll is sent and given a moment to park before the file is written, so what is timed is
write → answer, not the request's own set-up. Every answer is checked to name the file written.
Target: ``/v2`` no slower than ``/v1``.

    .venv/bin/python bench/bench_v2_watch.py [--rounds 100]
"""

from __future__ import annotations

import argparse
import json
import queue
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import gateway, print_latencies

DEBOUNCE_MS = 50
#: How long a long poll is given to reach the server and park before the write.
PARK_S = 0.03


def write_then(root: Path, name: str, answer: Callable[[], str]) -> float:
    """Writes ``root/name`` and returns the seconds until ``answer`` (already waiting) names it."""
    started = time.perf_counter()
    (root / name).write_text(name)
    got = answer()
    elapsed = time.perf_counter() - started
    assert got == name, (got, name)
    return elapsed


#: ``(cursor, seconds to wait) -> (events, next cursor)``
Poll = Callable[[int, float], tuple[list[dict], int]]


class LongPoll:
    """One contender: a long poll sent in a thread, the file written once it is parked."""

    def __init__(self, root: Path, request: Poll) -> None:
        self.root, self.request, self.cursor = root, request, 0

    def __call__(self, name: str) -> float:
        answers: queue.Queue[tuple[list[dict], int]] = queue.Queue()
        thread = threading.Thread(target=lambda: answers.put(self.request(self.cursor, 10)))
        thread.start()
        time.sleep(PARK_S)

        def answer() -> str:
            events, self.cursor = answers.get(timeout=30)
            return Path(events[0]["path"]).name

        elapsed = write_then(self.root, name, answer)
        thread.join()
        self.drain()
        return elapsed

    def drain(self) -> None:
        """The file's later events (its ``write`` after its ``create``), so the next round starts quiet."""
        while True:
            time.sleep(DEBOUNCE_MS * 3 / 1000)
            events, cursor = self.request(self.cursor, 0)
            if not events:
                return
            self.cursor = cursor


class Stream:
    """The SSE contender: one stream open for the whole run, read in a thread."""

    def __init__(self, base: str, watcher_id: str, root: Path) -> None:
        self.root = root
        self.arrivals: queue.Queue[str] = queue.Queue()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._read, args=(base, watcher_id), daemon=True)
        self.thread.start()
        assert self.ready.wait(10)

    def _read(self, base: str, watcher_id: str) -> None:
        with httpx.stream("GET", f"{base}/v2/watch/{watcher_id}/events", timeout=None) as response:
            kind = ""
            for line in response.iter_lines():
                if line.startswith("event:"):
                    kind = line.partition(":")[2].strip()
                elif line.startswith("data:") and kind == "watch_started":
                    self.ready.set()
                elif line.startswith("data:") and kind == "file_change":
                    event = json.loads(line.partition(":")[2])
                    if event["type"] == "create":
                        self.arrivals.put(Path(event["path"]).name)

    def __call__(self, name: str) -> float:
        return write_then(self.root, name, lambda: self.arrivals.get(timeout=30))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch, gateway() as base, httpx.Client(base_url=base, timeout=60) as api:
        roots = {name: Path(scratch, name) for name in ("v1", "v2", "sse")}
        for root in roots.values():
            root.mkdir()

        def create(route: str, root: Path) -> str:
            answer = api.post(route, json={"path": str(root), "debounce": DEBOUNCE_MS})
            answer.raise_for_status()
            return str(answer.json()["data"]["watcher_id"])

        v1_id = create("/v1/file/watch", roots["v1"])
        v2_id = create("/v2/watch", roots["v2"])
        sse_id = create("/v2/watch", roots["sse"])

        def v1_poll(cursor: int, wait: float) -> tuple[list[dict], int]:
            body = {"since": cursor, "timeout": int(wait)}
            data = api.post(f"/v1/file/watch/{v1_id}/poll", json=body).json()["data"]
            return data["events"], data["cursor"]

        def v2_poll(cursor: int, wait: float) -> tuple[list[dict], int]:
            params = {"cursor": cursor, "timeout": wait, "limit": 1000}
            data = api.get(f"/v2/watch/{v2_id}/poll", params=params).json()["data"]
            return data["events"], data["cursor"]

        contenders: dict[str, Callable[[str], float]] = {
            "/v1/file/watch poll (long poll)": LongPoll(roots["v1"], v1_poll),
            "/v2/watch poll (long poll)": LongPoll(roots["v2"], v2_poll),
            "/v2/watch events (SSE)": Stream(base, sse_id, roots["sse"]),
        }
        samples: dict[str, list[float]] = {name: [] for name in contenders}
        for number in range(args.rounds + 5):
            for label, contender in contenders.items():
                elapsed = contender(f"r{number:04}.txt")
                if number >= 5:  # warm-up rounds untimed
                    samples[label].append(elapsed)
        print(f"write -> event at the client, {args.rounds} rounds, debounce {DEBOUNCE_MS} ms")
        print_latencies(samples, label="watcher")


if __name__ == "__main__":
    main()
