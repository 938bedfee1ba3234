"""Screencast recordings of the current page: Chromium's ``Page.startScreencast`` frames (JPEG) fed at a
constant rate into Debian's ``ffmpeg``, which writes an H.264 MP4. One recorder for the page API
(``/v1/browser/page/record``: once/start/pause/resume/stop/status) and one for the display API
(``/v1/display/record`` and ``/v2/computer/record``: start/stop/status): with Chromium headful on an
X display, ffmpeg grabs that whole display (``x11grab``: every window, as a person sees it), else the
display is the browser's own page."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import shutil
import tempfile
import time
from typing import Any

from playwright.async_api import CDPSession

from ..session import BrowserSession
from .errors import PageConflict, PageError, PageNotFound, PageUnavailable

MAX_SECONDS = 3600


class Recorder:
    def __init__(self, name: str) -> None:
        self.name = name
        self.state = "idle"
        self.save_path: str | None = None
        self._started = 0.0
        self._recorded = 0.0
        self._frame: bytes | None = None
        self._cdp: CDPSession | None = None
        self._ffmpeg: asyncio.subprocess.Process | None = None
        self._pump: asyncio.Task[None] | None = None
        self._limit: asyncio.Task[None] | None = None
        #: The X display this recording grabs (None: the page's screencast).
        self._grabbing: str | None = None
        self._lock = asyncio.Lock()

    def status(self) -> dict[str, Any]:
        size = None
        if self.save_path and self.state == "stopped" and os.path.isfile(self.save_path):
            size = os.path.getsize(self.save_path)
        return {
            "status": self.state,
            "save_path": self.save_path,
            "duration": round(self._duration(), 2),
            "file_size_bytes": size,
        }

    def _duration(self) -> float:
        running = time.monotonic() - self._started if self.state == "recording" else 0.0
        return self._recorded + running

    async def start(self, session: BrowserSession, args: dict[str, Any]) -> dict[str, Any]:
        async with self._lock:
            if self.state in ("recording", "paused"):
                raise PageConflict(f"a {self.name} recording is already running; stop it first")
            ffmpeg = shutil.which("ffmpeg")
            if ffmpeg is None:
                raise PageUnavailable("ffmpeg is not installed: recordings need it")
            fps = args.get("fps") or 10
            default = os.path.join(tempfile.gettempdir(), f"{self.name}-{time.time_ns()}.mp4")
            target = await asyncio.to_thread(_writable_target, args.get("save_path") or default, self.name == "display")
            even = "pad=ceil(iw/2)*2:ceil(ih/2)*2"  # H.264 wants even sizes
            size = f"scale={args['width']}:{args['height']}," if args.get("width") and args.get("height") else ""
            self._grabbing = session.display if self.name == "display" else None
            source = ("x11grab", self._grabbing) if self._grabbing else ("image2pipe", "-")
            self._ffmpeg = await asyncio.create_subprocess_exec(
                ffmpeg,
                "-loglevel",
                "error",
                "-y",
                "-f",
                source[0],
                "-framerate",
                str(fps),
                "-i",
                source[1],
                "-vf",
                size + even,
                "-c:v",
                "libx264",
                "-preset",
                "veryfast",
                "-crf",
                str(args.get("crf") or 28),
                "-pix_fmt",
                "yuv420p",
                target,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
            )
            if not self._grabbing:
                page = await session.page()
                self._cdp = await page.context.new_cdp_session(page)
                self._cdp.on("Page.screencastFrame", self._on_frame)
                await self._cdp.send("Page.startScreencast", {"format": "jpeg", "quality": args.get("quality") or 80})
                self._frame = await page.screenshot(type="jpeg")  # the screencast sends frames on change only
                self._pump = asyncio.create_task(self._feed(fps))
            self.save_path, self.state = target, "recording"
            self._started, self._recorded = time.monotonic(), 0.0
            seconds = args.get("max_duration") or args.get("duration")
            if seconds:
                self._limit = asyncio.create_task(self._stop_after(min(float(seconds), MAX_SECONDS)))
            return self.status()

    def _on_frame(self, event: dict[str, Any]) -> None:
        self._frame = base64.b64decode(event["data"])
        if self._cdp is not None:
            task = asyncio.ensure_future(self._cdp.send("Page.screencastFrameAck", {"sessionId": event["sessionId"]}))
            task.add_done_callback(lambda done: done.exception())

    async def _feed(self, fps: int) -> None:
        """The latest frame, ``fps`` times a second while recording: the video keeps real time."""
        interval = 1 / fps
        while True:
            if self.state == "recording" and self._frame and self._ffmpeg and self._ffmpeg.stdin:
                try:
                    self._ffmpeg.stdin.write(self._frame)
                    await self._ffmpeg.stdin.drain()
                except (BrokenPipeError, ConnectionResetError):
                    return
            await asyncio.sleep(interval)

    async def _stop_after(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        await self.stop()

    def pause(self) -> dict[str, Any]:
        if self.state != "recording":
            raise PageConflict(f"no {self.name} recording is running")
        self._recorded, self.state = self._duration(), "paused"
        return self.status()

    def resume(self) -> dict[str, Any]:
        if self.state != "paused":
            raise PageConflict(f"no {self.name} recording is paused")
        self._started, self.state = time.monotonic(), "recording"
        return self.status()

    async def stop(self) -> dict[str, Any]:
        async with self._lock:
            if self.state not in ("recording", "paused"):
                raise PageConflict(f"no {self.name} recording is running")
            self._recorded, self.state = self._duration(), "stopping"
            current = asyncio.current_task()
            for task in (self._pump, self._limit):
                if task is not None and task is not current:
                    task.cancel()
            if self._cdp is not None:
                with contextlib.suppress(Exception):
                    await self._cdp.send("Page.stopScreencast")
                    await self._cdp.detach()
            if self._ffmpeg is not None and self._ffmpeg.stdin is not None:
                if self._grabbing:  # x11grab has no end of input: ffmpeg's ``q`` ends it, the file whole
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        self._ffmpeg.stdin.write(b"q")
                        await self._ffmpeg.stdin.drain()
                self._ffmpeg.stdin.close()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(30):
                        await self._ffmpeg.wait()
            self._cdp = self._ffmpeg = self._pump = self._limit = None
            self.state = "stopped"
            return self.status()


def _writable_target(path: str, create: bool) -> str:
    """``path`` made absolute; its directory must exist, or is made when ``create`` (the display's
    recordings, as aiod's ``display/record`` does: a directory that cannot be made is a bad path)."""
    target = os.path.abspath(path)
    folder = os.path.dirname(target)
    if create:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise PageError(f"cannot write recordings to {folder}: {exc.strerror}") from exc
        if not os.access(folder, os.W_OK):
            raise PageError(f"cannot write recordings to {folder}: permission denied")
    if not os.path.isdir(folder):
        raise PageNotFound(f"no such directory: {folder}")
    return target


PAGE = Recorder("page")
DISPLAY = Recorder("display")


async def record(session: BrowserSession, args: dict[str, Any]) -> Any:
    action = args.get("action") or "once"
    if action == "once":
        await PAGE.start(session, {**args, "duration": None})
        await asyncio.sleep(min(float(args.get("duration") or 5), MAX_SECONDS))
        return await PAGE.stop()
    actions = {"start": lambda: PAGE.start(session, args), "stop": PAGE.stop}
    if action in actions:
        return await actions[action]()
    simple = {"pause": PAGE.pause, "resume": PAGE.resume, "status": PAGE.status}
    if action not in simple:
        raise PageError("action must be once, start, pause, resume, stop or status")
    return simple[action]()


async def display_record(session: BrowserSession, args: dict[str, Any]) -> Any:
    action = args.get("action")
    if action == "start":
        return await DISPLAY.start(session, args)
    if action == "stop":
        return await DISPLAY.stop()
    if action == "status":
        return DISPLAY.status()
    raise PageError("action must be start, stop or status")


OPERATIONS = {"record": record, "display_record": display_record}
