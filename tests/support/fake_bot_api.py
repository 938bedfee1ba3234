"""A local stand-in for the Telegram Bot API (a real Starlette app on 127.0.0.1): methods at
``/bot<token>/<method>``, files at ``/file/bot<token>/<path>``. Tests queue updates for
``getUpdates`` and read back every call the bot made (``sendMessage``, ``sendDocument``, ...).

Run as a script (``python fake_bot_api.py PORT TOKEN``, e.g. inside a container) it serves on
0.0.0.0 and adds ``POST /test/message`` (``{"chat_id", "text"}``: queue a message) and
``GET /test/calls`` (the calls so far, file contents replaced by their length) for a test outside."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive

BOT_ID = 4242


class FakeBotApi:
    def __init__(self, token: str) -> None:
        self.token = token
        self.calls: list[dict[str, Any]] = []
        self.files: dict[str, bytes] = {}
        #: Files served as ``size`` zero bytes made as they are sent, declared as ``declared`` bytes.
        self.streams: dict[str, tuple[int, int]] = {}
        #: Bytes of each streamed file sent so far.
        self.served: dict[str, int] = {}
        self._updates: list[dict[str, Any]] = []
        self._next_update = 1
        self._next_message = 100
        self._lock = threading.Lock()

    # --- what tests use -----------------------------------------------------------------------

    def push(self, update: dict[str, Any]) -> int:
        """Queue an update (``update_id`` added); returns its id."""
        with self._lock:
            update = {"update_id": self._next_update, **update}
            self._next_update += 1
            self._updates.append(update)
            return update["update_id"]

    def message(self, chat_id: int, text: str = "", user_id: int | None = None, **extra: Any) -> dict[str, Any]:
        """Queue a message update from ``user_id`` (default: the chat's id) in ``chat_id``."""
        with self._lock:
            self._next_message += 1
            message_id = self._next_message
        message = {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "group"},
            "from": {"id": user_id or abs(chat_id), "is_bot": False, "first_name": "tester"},
            **({"text": text} if text else {}),
            **extra,
        }
        if text.startswith("/"):
            command = text.split()[0]
            message["entities"] = [{"type": "bot_command", "offset": 0, "length": len(command)}]
        self.push({"message": message})
        return message

    def add_file(self, file_id: str, content: bytes) -> None:
        self.files[file_id] = content

    def add_stream(self, file_id: str, size: int, declared: int) -> None:
        """A file of ``size`` bytes that ``getFile`` says is ``declared`` bytes (a lying server)."""
        self.streams[file_id] = (size, declared)
        self.served[file_id] = 0

    def sent(self, method: str, chat_id: int | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [
                c
                for c in self.calls
                if c["method"] == method and (chat_id is None or str(c.get("chat_id")) == str(chat_id))
            ]

    def wait_sent(
        self, method: str, chat_id: int | None = None, count: int = 1, timeout: float = 20, contains: str | None = None
    ) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [c for c in self.sent(method, chat_id) if contains is None or contains in str(c.get("text", ""))]
            if len(found) >= count:
                return found
            time.sleep(0.05)
        made = [{k: v for k, v in c.items() if k != "result"} for c in self.calls if c["method"] != "getUpdates"]
        raise TimeoutError(f"{method} to {chat_id} ({contains!r}) not sent {count}x; calls: {made[-10:]}")

    def polled(self) -> bool:
        return bool(self.sent("getUpdates"))

    # --- the server -------------------------------------------------------------------------

    def _message_result(self, chat_id: Any, **fields: Any) -> dict[str, Any]:
        with self._lock:
            self._next_message += 1
            message_id = self._next_message
        return {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": {"id": int(chat_id), "type": "private"},
            **fields,
        }

    async def method(self, request: Request) -> Response:
        if request.path_params["token"] != self.token:
            return JSONResponse({"ok": False, "error_code": 401, "description": "Unauthorized"}, 401)
        name = request.path_params["method"]
        params: dict[str, Any] = {}
        if request.headers.get("content-type", "").startswith("application/json"):
            params = await request.json()
        else:
            form = await request.form()
            for key, value in form.multi_items():
                if isinstance(value, UploadFile):
                    params[key] = {"filename": value.filename, "content": await value.read()}
                else:
                    params[key] = value
        result = await self._answer(name, params)
        with self._lock:
            self.calls.append({"method": name, **params, "result": result})
        return JSONResponse({"ok": True, "result": result})

    async def _answer(self, name: str, params: dict[str, Any]) -> Any:
        if name == "getMe":
            return {"id": BOT_ID, "is_bot": True, "first_name": "Fake", "username": "fake_bot"}
        if name == "getUpdates":
            offset = int(params.get("offset") or 0)
            deadline = time.monotonic() + min(float(params.get("timeout") or 0), 1.0)
            while True:
                with self._lock:
                    ready = [u for u in self._updates if u["update_id"] >= offset]
                if ready or time.monotonic() >= deadline:
                    return ready
                await asyncio.sleep(0.05)
        if name == "sendMessage":
            return self._message_result(params["chat_id"], text=params.get("text", ""))
        if name == "sendDocument":
            return self._message_result(params["chat_id"], document={"file_id": "sent", "file_unique_id": "sent"})
        if name == "getFile":
            file_id = params["file_id"]
            return {
                "file_id": file_id,
                "file_unique_id": file_id,
                "file_size": self.streams[file_id][1] if file_id in self.streams else len(self.files.get(file_id, b"")),
                "file_path": f"documents/{file_id}",
            }
        if name == "editMessageText":
            return self._message_result(params.get("chat_id", 0), text=params.get("text", ""))
        return True  # deleteWebhook, answerCallbackQuery, sendChatAction, setMyCommands, ...

    async def file(self, request: Request) -> Response:
        if request.path_params["token"] != self.token:
            return Response(status_code=401)
        file_id = request.path_params["path"].rsplit("/", 1)[-1]
        if file_id in self.streams:
            return StreamingResponse(self._stream(file_id, request.receive), media_type="application/octet-stream")
        content = self.files.get(file_id)
        return (
            Response(content, media_type="application/octet-stream")
            if content is not None
            else Response(status_code=404)
        )

    async def _stream(self, file_id: str, receive: Receive) -> AsyncIterator[bytes]:
        """The file's bytes, a MiB at a time, until they are all sent or the client has gone."""
        gone = asyncio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        watcher = asyncio.create_task(watch())
        chunk = bytes(1024 * 1024)
        left = self.streams[file_id][0]
        try:
            while left > 0 and not gone.is_set():
                part = chunk[: min(left, len(chunk))]
                yield part
                self.served[file_id] += len(part)
                left -= len(part)
                await asyncio.sleep(0)
        finally:
            watcher.cancel()

    async def test_message(self, request: Request) -> Response:
        body = await request.json()
        return JSONResponse(self.message(int(body["chat_id"]), body.get("text", ""), body.get("user_id")))

    async def test_calls(self, request: Request) -> Response:
        with self._lock:
            calls = [
                {k: (len(v["content"]) if isinstance(v, dict) and "content" in v else v) for k, v in c.items()}
                for c in self.calls
            ]
        return JSONResponse(calls)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/bot{token}/{method}", self.method, methods=["GET", "POST"]),
                Route("/file/bot{token}/{path:path}", self.file, methods=["GET"]),
                Route("/test/message", self.test_message, methods=["POST"]),
                Route("/test/calls", self.test_calls, methods=["GET"]),
            ]
        )

    @contextlib.contextmanager
    def serve(self) -> Iterator[str]:
        from .servers import serve_app  # not needed (nor importable) when run as a script

        with serve_app(self.app()) as base:
            yield base


def parsed(value: Any) -> Any:
    """A form field PTB JSON-encoded (reply_markup, ...)."""
    return json.loads(value) if isinstance(value, str) else value


if __name__ == "__main__":
    import sys

    import uvicorn

    uvicorn.run(FakeBotApi(sys.argv[2]).app(), host="0.0.0.0", port=int(sys.argv[1]), log_level="warning")
