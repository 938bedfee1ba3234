"""A Python session's Jupyter kernel: ``python3 -m ipykernel_launcher`` driven with ``jupyter_client``.

The kernel runs with the sandbox environment in its own process group, talking over ``ipc`` sockets in
a private (0700) directory, so no port is opened and no other user can reach it. A cell's outputs are
read from IOPub in the kernel's order (stream text of one name merged, as a notebook shows it). A cell
past its timeout is interrupted (SIGINT, the kernel's ``signal`` interrupt mode); a kernel that does not
stop within a grace period, or dies, is killed with all it started, and the session reports it lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any

from agentbox_common.processes import kill_process_group, pid_exists

from .worker import INTERRUPT_GRACE, OUTPUT_LIMIT, START_TIMEOUT, WorkerStartError, limit_memory

#: How often a wait for the kernel looks whether its process is still there (seconds).
_POLL = 0.25


@dataclass
class KernelOutcome:
    """One cell as the kernel answered it; ``reply`` is None when the kernel died or would not stop."""

    outputs: list[dict[str, Any]] = field(default_factory=list)
    reply: dict[str, Any] | None = None
    execution_count: int | None = None
    timed_out: bool = False
    truncated: bool = False

    def stream(self, name: str) -> str:
        return "".join(o["text"] for o in self.outputs if o["output_type"] == "stream" and o["name"] == name)


class _Outputs:
    """Collects a cell's IOPub outputs within the output cap (2,000,000 characters)."""

    def __init__(self, outcome: KernelOutcome) -> None:
        self.outcome = outcome
        self.size = 0

    def add(self, msg_type: str, content: dict[str, Any]) -> None:
        outputs = self.outcome.outputs
        if msg_type == "stream":
            text = self._fit(str(content.get("text", "")))
            name = content.get("name", "stdout")
            if outputs and outputs[-1]["output_type"] == "stream" and outputs[-1]["name"] == name:
                outputs[-1]["text"] += text
            elif text:
                outputs.append({"output_type": "stream", "name": name, "text": text})
        elif msg_type in ("display_data", "execute_result"):
            data = dict(content.get("data") or {})
            size = sum(len(v) for v in data.values() if isinstance(v, str))
            if self.size + size > OUTPUT_LIMIT:
                self.outcome.truncated = True
                return
            self.size += size
            output: dict[str, Any] = {"output_type": msg_type, "data": data, "metadata": content.get("metadata") or {}}
            if msg_type == "execute_result":
                output["execution_count"] = content.get("execution_count")
            outputs.append(output)
        elif msg_type == "error":
            outputs.append(
                {
                    "output_type": "error",
                    "ename": content.get("ename", ""),
                    "evalue": content.get("evalue", ""),
                    "traceback": list(content.get("traceback") or []),
                }
            )
        elif msg_type == "clear_output":
            outputs[:] = [o for o in outputs if o["output_type"] in ("stream", "error")]
        elif msg_type == "execute_input":
            self.outcome.execution_count = content.get("execution_count")

    def _fit(self, text: str) -> str:
        room = OUTPUT_LIMIT - self.size
        if len(text) > room:
            self.outcome.truncated = True
            text = text[: max(room, 0)]
        self.size += len(text)
        return text


class Kernel:
    """One ipykernel process and its client; ``process`` and ``alive`` as a worker has them."""

    def __init__(self, process: asyncio.subprocess.Process, directory: str, client: Any) -> None:
        self.process = process
        self._directory = directory
        self._client = client
        self._lock = asyncio.Lock()
        self._killed = False
        self._closed = False

    @classmethod
    async def start(cls, python: str, *, env: Mapping[str, str], cwd: str, memory_limit: int | None = None) -> Kernel:
        """Start a kernel and wait until it answers ``kernel_info`` (:class:`WorkerStartError` if not)."""
        from jupyter_client.asynchronous.client import AsyncKernelClient
        from jupyter_client.connect import write_connection_file

        directory = tempfile.mkdtemp(prefix="agentbox-kernel-")
        connection, _ = write_connection_file(
            os.path.join(directory, "kernel.json"), transport="ipc", ip=os.path.join(directory, "ipc")
        )
        errors = os.open(os.path.join(directory, "stderr"), os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            process = await asyncio.create_subprocess_exec(
                python,
                "-m",
                "ipykernel_launcher",
                "-f",
                connection,
                "--HistoryManager.enabled=False",
                "--InteractiveShell.colors=nocolor",  # tracebacks a model reads, without ANSI codes
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=errors,
                env=dict(env),
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as exc:
            shutil.rmtree(directory, ignore_errors=True)
            raise WorkerStartError(f"{python} cannot start: {exc.strerror or exc}") from None
        finally:
            os.close(errors)
        client = AsyncKernelClient(connection_file=connection)
        client.load_connection_file()
        kernel = cls(process, directory, client)
        try:
            if memory_limit:
                limit_memory(process.pid, memory_limit)
            client.start_channels()
            await kernel._wait_ready(python)
        except BaseException:
            await asyncio.shield(kernel.close())
            raise
        return kernel

    async def _wait_ready(self, python: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.returncode is not None or not _running(self.process.pid):
                await self.process.wait()
                text = await asyncio.to_thread(Path(self._directory, "stderr").read_text, errors="replace")
                detail = text.strip()[-2000:]
                raise WorkerStartError(
                    f"{python} -m ipykernel_launcher exited with code {self.process.returncode} during start-up"
                    + (f": {detail}" if detail else "")
                )
            msg_id = self._client.kernel_info()
            if await self._answered(msg_id) and await self._published(msg_id):
                return
        raise WorkerStartError(f"{python} -m ipykernel_launcher did not answer within {START_TIMEOUT:.0f} s")

    async def _answered(self, msg_id: str) -> bool:
        """Whether the shell reply to ``msg_id`` comes (other replies are skipped)."""
        with contextlib.suppress(Empty):
            while True:
                reply = await self._client.get_shell_msg(timeout=_POLL * 2)
                if reply["parent_header"].get("msg_id") == msg_id:
                    return True
        return False

    async def _published(self, msg_id: str) -> bool:
        """Whether IOPub carries the kernel's idle status after ``msg_id``: only then is this client
        subscribed (a ZeroMQ subscriber joins late, and what the kernel publishes before is lost, the
        first cell's output with it). Earlier messages are drained on the way."""
        with contextlib.suppress(Empty):
            while True:
                message = await self._client.get_iopub_msg(timeout=_POLL * 2)
                if (
                    message["parent_header"].get("msg_id") == msg_id
                    and message["msg_type"] == "status"
                    and message["content"].get("execution_state") == "idle"
                ):
                    return True
        return False

    @property
    def alive(self) -> bool:
        """A killed kernel is a zombie until asyncio reaps it a moment later: that counts as gone."""
        return self.process.returncode is None and not self._killed and _running(self.process.pid)

    async def chdir(self, directory: str) -> None:
        """Move the kernel's working directory (between cells, so the session's ``cwd`` holds)."""
        await self.execute(f"__import__('os').chdir({directory!r})", 10.0, silent=True)

    async def execute(self, code: str, budget: float, *, silent: bool = False) -> KernelOutcome:
        """Run a cell; past ``budget`` seconds interrupt it, and kill the kernel if it will not stop.
        Cancelled, the kernel is killed (the session then reports itself lost)."""
        async with self._lock:
            outcome = KernelOutcome()
            if not self.alive:
                return outcome
            msg_id = self._client.execute(code, silent=silent, store_history=not silent, allow_stdin=False)
            collected = _Outputs(outcome)
            try:
                done = await self._collect(msg_id, collected, time.monotonic() + budget)
                if not done and not self.alive:  # died: its exit status, for the answer
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.process.wait(), INTERRUPT_GRACE)
                elif not done:
                    outcome.timed_out = True
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(self.process.pid, signal.SIGINT)
                    done = await self._collect(msg_id, collected, time.monotonic() + INTERRUPT_GRACE)
                    if not done:
                        self.kill()
                if done:
                    outcome.reply = await self._reply(msg_id)
            except asyncio.CancelledError:
                self.kill()
                raise
            return outcome

    async def _collect(self, msg_id: str, collected: _Outputs, deadline: float) -> bool:
        """Read IOPub until the kernel is idle after ``msg_id`` (True), or the deadline or its death."""
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = await self._client.get_iopub_msg(timeout=min(left, _POLL))
            except Empty:
                if not self.alive:
                    return False
                continue
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            kind = message["msg_type"]
            if kind == "status" and message["content"].get("execution_state") == "idle":
                return True
            collected.add(kind, message["content"])
        return False

    async def _reply(self, msg_id: str) -> dict[str, Any] | None:
        """The ``execute_reply`` (sent before IOPub's idle, so it is there or all but)."""
        deadline = time.monotonic() + INTERRUPT_GRACE
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = await self._client.get_shell_msg(timeout=left)
            except Empty:
                return None
            if message["parent_header"].get("msg_id") == msg_id:
                content: dict[str, Any] = message["content"]
                return content
        return None

    def kill(self) -> None:
        if self.process.returncode is None:
            kill_process_group(self.process.pid)
        self._killed = True

    async def close(self) -> None:
        """Kill the kernel's process group and remove its sockets (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self.kill()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.process.wait(), 5)
        with contextlib.suppress(Exception):
            self._client.stop_channels()
        await asyncio.to_thread(shutil.rmtree, self._directory, True)


def _running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return pid_exists(pid)
