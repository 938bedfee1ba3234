"""The code plane: Python and JavaScript interpreters, stateless calls and sessions.

Stateless calls (the MCP tool, ``/v1/code/execute`` without a session) run on warm workers (see
``pools.py``) and share nothing with each other. Sessions keep one REPL process each, so variables,
imports and functions persist: a Python session is a Jupyter kernel (``kernel.py``) where the
sandbox's Python has ipykernel (else the driver's own REPL), taken from a pool of started ones. Every
path answers with Jupyter's output model (streams, MIME-bundle results and displays, errors). A cell
that overruns its timeout is interrupted, and only when it
will not stop is the process killed and restarted (its state lost, which the result says).
Interpreters run in their own process groups with the sandbox environment (no gateway secrets), their
data memory capped by ``AIO_CODE_MEMORY_LIMIT_MB``. A session whose interpreter died between calls
(killed, out of memory) does not quietly go on as a fresh one: its next call answers ``SessionLost``
without running the code, and the calls after that run in the new interpreter."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import shutil
import signal
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from agentbox_common.processes import sandbox_environment

from ...settings import GatewaySettings
from ..languages import Language
from ..streaming import OutputRelay, OutputSink
from . import node_driver
from .errors import (
    CodeSessionNotFound,
    InterpreterUnavailable,
    InvalidCodeRequest,
    SessionLimitReached,
    UnsupportedLanguage,
)
from .kernel import Kernel, KernelOutcome
from .pools import KernelPool, WorkerPool
from .worker import Outcome, Worker, WorkerStartError

logger = logging.getLogger(__name__)

LANGUAGES = tuple(language.value for language in Language)
DEFAULT_TIMEOUT = 30
MAX_TIMEOUT = 900
MAX_SESSIONS = 20
#: Idle time after which a session is closed (seconds): aiod's code REPL default; Node.js REPL's.
SESSION_IDLE = {"python": 1800.0, "javascript": 24 * 3600.0}
#: The longest an idle session outlives its idle limit before the background reaper closes it (seconds).
REAP_INTERVAL = 60.0
#: The most output characters a cell keeps (streams, results and images together).
OUTPUT_CHARS = 2_000_000
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


@dataclass(frozen=True)
class CellError:
    ename: str
    evalue: str
    traceback: list[str]

    @property
    def text(self) -> str:
        return "\n".join(self.traceback)


@dataclass(frozen=True)
class Execution:
    language: str
    code: str
    status: str  # "ok", "error" or "timeout"
    stdout: str
    stderr: str
    exit_code: int
    execution_count: int
    #: The trailing expression's value as a MIME bundle (at least ``text/plain``).
    result: dict[str, Any] | None
    error: CellError | None
    session_id: str | None
    #: ``display_data`` outputs (``display()``, matplotlib figures), in the order they were shown.
    displays: tuple[dict[str, Any], ...] = ()
    #: A kernel's outputs in the order it sent them; None: built from the fields above.
    ordered: tuple[dict[str, Any], ...] | None = None

    def outputs(self) -> list[dict[str, Any]]:
        """Jupyter's output model: the streams, the displays, then the result or the error (a
        kernel's own order where a kernel ran the code)."""
        if self.ordered is not None:
            return [dict(output) for output in self.ordered]
        outputs: list[dict[str, Any]] = []
        for name, text in (("stdout", self.stdout), ("stderr", self.stderr)):
            if text:
                outputs.append({"output_type": "stream", "name": name, "text": text})
        outputs.extend(dict(output) for output in self.displays)
        if self.result is not None:
            outputs.append(
                {
                    "output_type": "execute_result",
                    "data": dict(self.result),
                    "metadata": {},
                    "execution_count": self.execution_count,
                }
            )
        if self.error is not None:
            outputs.append(
                {
                    "output_type": "error",
                    "ename": self.error.ename,
                    "evalue": self.error.evalue,
                    "traceback": list(self.error.traceback),
                }
            )
        return outputs


@dataclass(frozen=True)
class RuntimeInfo:
    language: str
    executable: str
    version: str


@dataclass(frozen=True)
class SessionInfo:
    session_id: str
    language: str
    cwd: str
    created_at: float  # epoch seconds
    last_used: float
    max_idle: float  # seconds
    state: str  # "IDLE" or "EXECUTING"
    execution_count: int
    #: What runs its code: ``kernel`` (an ipykernel) or ``native`` (the plane's own REPL).
    backend: str = "native"

    @property
    def age_seconds(self) -> int:
        """Seconds since the session was created."""
        return int(max(time.time() - self.created_at, 0))

    @property
    def idle_seconds(self) -> int:
        return int(max(time.time() - self.last_used, 0))


@dataclass
class _Session:
    id: str
    language: str
    cwd: str
    max_idle: float
    created_at: float = field(default_factory=time.time)
    last_used: float = field(default_factory=time.time)
    execution_count: int = 0
    worker: Worker | Kernel | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: The last answer already said the interpreter is gone (so its restart needs no new notice).
    loss_reported: bool = False
    #: Made implicitly (stateful execution without a session id): the first to go when sessions run out.
    auto: bool = False

    def info(self) -> SessionInfo:
        state = "EXECUTING" if self.lock.locked() else "IDLE"
        return SessionInfo(
            self.id,
            self.language,
            self.cwd,
            self.created_at,
            self.last_used,
            self.max_idle,
            state,
            self.execution_count,
            "kernel" if isinstance(self.worker, Kernel) else "native",
        )


@dataclass
class _Runtime:
    """How to start one language's worker; the executable and version are learnt from the first one."""

    language: str
    program: str
    flag: str
    source: str
    stateless_mode: str
    executable: str | None = None
    version: str | None = None
    #: Whether this interpreter can run a Jupyter kernel (has ipykernel); None: not known yet.
    kernel: bool | None = None

    def argv(self, env: Mapping[str, str]) -> list[str]:
        executable = self.executable or shutil.which(self.program, path=env.get("PATH"))
        if executable is None:
            raise InterpreterUnavailable(
                f"{self.program} is not installed (not on PATH): {self.language} code cannot run"
            )
        return [executable, self.flag, self.source]


def normalize_language(language: str | None) -> Language:
    """``python`` when absent; a few common aliases (``py``, ``js``, ``node``) are accepted."""
    if language is None:
        return Language.PYTHON
    name = Language.parse(str(language).strip())
    if name is None:
        raise UnsupportedLanguage(f"unsupported language {language!r}; supported languages: {', '.join(LANGUAGES)}")
    return name


def check_timeout(timeout: float | None) -> float:
    if timeout is None:
        return float(DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 1 <= timeout <= MAX_TIMEOUT:
        raise InvalidCodeRequest(f"timeout must be between 1 and {MAX_TIMEOUT} seconds, got {timeout!r}")
    return float(timeout)


class CodePlane:
    def __init__(
        self, settings: GatewaySettings, *, max_sessions: int = MAX_SESSIONS, env: Mapping[str, str] | None = None
    ) -> None:
        self._env = sandbox_environment(env)
        home = Path(self._env.get("HOME") or Path.home())
        self.default_cwd = str(home) if home.is_dir() else "/"
        self.max_sessions = max_sessions
        #: Data memory of each interpreter process in MiB (``AIO_CODE_MEMORY_LIMIT_MB``), or None.
        self.memory_limit_mb = settings.code_memory_limit_mb or None
        python_source = resources.files(__package__).joinpath("python_driver.py").read_text(encoding="utf-8")
        self._runtimes = {
            "python": _Runtime("python", "python3", "-c", python_source, "fork"),
            "javascript": _Runtime("javascript", "node", "-e", node_driver.SOURCE, "once"),
        }
        self._pools = {
            "python": WorkerPool(lambda: self._spawn("python", "fork", self.default_cwd), reusable=True),
            "javascript": WorkerPool(lambda: self._spawn("javascript", "once", self.default_cwd), reusable=False),
        }
        self._sessions: dict[str, _Session] = {}
        self._npm_version: str | None = None
        #: Python sessions are Jupyter kernels: at most this many, closed after this long idle.
        self.kernel_max_sessions = settings.kernel_max_sessions
        self.kernel_idle = settings.kernel_session_timeout
        self.kernel_prewarm = settings.kernel_prewarm
        self._kernels = KernelPool(self._start_kernel, spares=settings.kernel_prewarm)
        #: Why kernels are not used although ipykernel is there (they cannot start within the memory limit).
        self._kernels_refused: str | None = None
        self._reaper: asyncio.Task[None] | None = None
        #: The reaper's round of closing (shielded: stopping the reaper must not cut a close short).
        self._expiring: asyncio.Future[None] | None = None

    async def start(self) -> None:
        """Warm a worker per language in the background, so even the first call is fast. The
        gateway does not: each language's first call starts its worker (a gateway that serves no
        code keeps no interpreter), and the pools keep one warm after that."""
        for pool in self._pools.values():
            pool.warm()

    async def kernel_backend(self) -> bool:
        """Whether Python sessions run on a Jupyter kernel (the sandbox's Python has ipykernel)."""
        runtime = self._runtimes["python"]
        if runtime.kernel is None:
            await self._pools["python"].prepare()
        return bool(runtime.kernel) and self._kernels_refused is None

    async def _start_kernel(self) -> Kernel:
        executable = self._runtimes["python"].executable or self._runtimes["python"].argv(self._env)[0]
        limit = self.memory_limit_mb * 1024 * 1024 if self.memory_limit_mb else None
        # matplotlib's inline backend (non-interactive): ``plt.show()`` displays the figure as image/png
        env = {"MPLBACKEND": "module://matplotlib_inline.backend_inline", **self._env}
        try:
            return await Kernel.start(executable, env=env, cwd=self.default_cwd, memory_limit=limit)
        except WorkerStartError as exc:
            raise InterpreterUnavailable(str(exc)) from None

    async def _spawn(self, language: str, mode: str, cwd: str) -> Worker:
        runtime = self._runtimes[language]
        try:
            worker = await Worker.spawn(
                runtime.argv(self._env),
                mode,
                env=self._env,
                cwd=cwd,
                stdin_pipe=mode == "once",
                memory_limit=self.memory_limit_mb * 1024 * 1024 if self.memory_limit_mb else None,
            )
        except WorkerStartError as exc:
            raise InterpreterUnavailable(str(exc)) from None
        runtime.executable = str(worker.info.get("executable") or runtime.executable)
        runtime.version = str(worker.info.get("version") or runtime.version)
        if "ipykernel" in worker.info:
            runtime.kernel = bool(worker.info["ipykernel"])
            if runtime.kernel and self._kernels_refused is None:
                self._kernels.warm()  # like the fork server: warm from the first Python call on
        return worker

    async def _open(self, session: _Session) -> Worker | Kernel:
        """A session's interpreter: a Jupyter kernel for Python where there is ipykernel, else a REPL."""
        if session.language == "python" and await self.kernel_backend():
            try:
                kernel = await self._kernels.take()
            except InterpreterUnavailable as exc:
                if not self.memory_limit_mb:
                    raise
                # A kernel's threads alone may not fit a small AIO_CODE_MEMORY_LIMIT_MB: the REPL does.
                self._kernels_refused = str(exc)
                logger.warning("Python sessions run on the plane's own REPL: a kernel did not start: %s", exc)
            else:
                if session.cwd != self.default_cwd:
                    await kernel.chdir(session.cwd)
                return kernel
        return await self._spawn(session.language, "inline", session.cwd)

    def _directory(self, cwd: str | None) -> str | None:
        if cwd is None or cwd == "":
            return None
        path = Path(self.default_cwd, cwd).expanduser()
        if not path.is_dir():
            raise InvalidCodeRequest(f"cwd {cwd!r} is not an existing directory")
        return str(path)

    # -- execution -------------------------------------------------------------------------------

    async def execute(
        self,
        language: str | None,
        code: str,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - the code's time budget, not this call's
        cwd: str | None = None,
        session_id: str | None = None,
        stateful: bool = False,
        stdin: str | None = None,
        files: Mapping[str, str | None] | None = None,
        on_output: OutputSink | None = None,
    ) -> Execution:
        """Run ``code``: in a fresh interpreter, or in a session when ``session_id`` is given or
        ``stateful`` is set (a session is created on first use, with a generated id when none given).
        ``stdin`` (stateless JavaScript only) is the program's standard input; ``files`` are written
        into the working directory first. ``on_output`` gets stdout and stderr text as it is
        written (stateless runs)."""
        name = normalize_language(language)
        seconds = check_timeout(timeout)
        directory = self._directory(cwd)
        if stdin is not None and (name != "javascript" or session_id is not None or stateful):
            raise InvalidCodeRequest("stdin is only supported for stateless JavaScript execution")
        await self._expire_sessions()
        if files:
            await asyncio.to_thread(_write_files, directory or self.default_cwd, files)
        if session_id is not None or stateful:
            session = await self._session_for(name, session_id, directory)
            return await self._run_in_session(session, code, seconds, directory)
        relay = OutputRelay(on_output) if on_output is not None else None
        async with self._pools[name].worker() as worker, relay.running() if relay else contextlib.nullcontext():
            data = (stdin or "").encode() if name == "javascript" else None
            outcome = await worker.run(
                {"code": code, "cwd": directory or self.default_cwd},
                seconds,
                stdin=data,
                listener=relay.push if relay else None,
            )
        return _execution(name, code, outcome, seconds, None, kept=False, memory_limit_mb=self.memory_limit_mb)

    async def _session_for(self, language: str, session_id: str | None, cwd: str | None) -> _Session:
        if session_id is not None and session_id in self._sessions:
            session = self._sessions[session_id]
            if session.language != language:
                raise InvalidCodeRequest(f"session {session_id!r} runs {session.language}, not {language}")
            return session
        info, _ = await self.create_session(language, session_id, cwd=cwd, auto=session_id is None)
        return self._sessions[info.session_id]

    async def _run_in_session(self, session: _Session, code: str, seconds: float, cwd: str | None) -> Execution:
        async with session.lock:
            session.last_used = time.time()
            if session.worker is None or not session.worker.alive:
                lost = None
                if session.worker is not None:
                    await session.worker.close()  # after which its exit status is known
                    lost = None if session.loss_reported else _loss_note(session.worker)
                session.worker = None
                session.worker = await self._open(session)
                session.loss_reported = False
                if lost is not None:
                    session.execution_count = 0
                    return _lost(session, code, lost)
            if isinstance(session.worker, Kernel):
                return await self._run_in_kernel(session, session.worker, code, seconds, cwd)
            outcome = await session.worker.run({"code": code, "cwd": cwd}, seconds)
            if cwd is not None:
                session.cwd = cwd
            if outcome.reply is not None:
                session.execution_count = int(outcome.reply.get("execution_count") or session.execution_count + 1)
            session.last_used = time.time()
            session.loss_reported = not session.worker.alive  # this answer says so
            return _execution(
                session.language,
                code,
                outcome,
                seconds,
                session.id,
                kept=session.worker.alive,
                memory_limit_mb=self.memory_limit_mb,
            )

    async def _run_in_kernel(
        self, session: _Session, kernel: Kernel, code: str, seconds: float, cwd: str | None
    ) -> Execution:
        if cwd is not None and cwd != session.cwd:
            await kernel.chdir(cwd)
            session.cwd = cwd
        outcome = await kernel.execute(code, seconds)
        session.execution_count = outcome.execution_count or session.execution_count + 1
        session.last_used = time.time()
        session.loss_reported = not kernel.alive  # this answer says so
        return _kernel_execution(session, code, outcome, seconds, kernel, self.memory_limit_mb)

    # -- sessions --------------------------------------------------------------------------------

    async def create_session(
        self,
        language: str | None,
        session_id: str | None = None,
        *,
        cwd: str | None = None,
        max_idle: float | None = None,
        auto: bool = False,
    ) -> tuple[SessionInfo, bool]:
        """Start a REPL; returns its info and whether it was created (False: the id already exists).
        At the session limit the least recently used idle implicit (``auto``) session makes room."""
        name = normalize_language(language)
        directory = self._directory(cwd) or self.default_cwd
        if max_idle is not None and max_idle <= 0:
            raise InvalidCodeRequest("max_idle_time must be a positive number of seconds")
        await self._expire_sessions()
        if session_id is not None:
            if not _SESSION_ID.match(session_id):
                raise InvalidCodeRequest("session_id must be 1-128 letters, digits, '.', '_', ':' or '-'")
            existing = self._sessions.get(session_id)
            if existing is not None:
                if existing.language != name:
                    raise InvalidCodeRequest(f"session {session_id!r} runs {existing.language}, not {name}")
                return existing.info(), False
        limit, setting = self.max_sessions, ""
        if name == "python" and await self.kernel_backend():
            limit, setting = min(limit, self.kernel_max_sessions), " (AIO_KERNEL_MAX_SESSIONS)"
        if self._count(name, setting) >= limit:
            await self._evict_one_auto(name if setting else None)
        if self._count(name, setting) >= limit:
            raise SessionLimitReached(
                f"session limit reached: {limit} sessions are open{setting}; delete one to start another"
            )
        idle = max_idle or (self.kernel_idle if setting else SESSION_IDLE[name])
        session = _Session(session_id or str(uuid.uuid4()), name, directory, idle, auto=auto)
        self._sessions[session.id] = session  # holds the slot while the interpreter starts
        try:
            session.worker = await self._open(session)
        except BaseException:
            self._sessions.pop(session.id, None)
            raise
        session.last_used = time.time()  # idle from now, not from before its interpreter started
        self._start_reaper()
        return session.info(), True

    def _count(self, language: str, kernels: str) -> int:
        """Sessions counted against the limit: all of them, or (kernels) the Python ones."""
        return sum(1 for s in self._sessions.values() if not kernels or s.language == language)

    async def _evict_one_auto(self, language: str | None = None) -> None:
        idle = [
            s
            for s in self._sessions.values()
            if s.auto and not s.lock.locked() and (language is None or s.language == language)
        ]
        if idle:
            oldest = min(idle, key=lambda s: s.last_used)
            self._sessions.pop(oldest.id, None)
            await _close_session(oldest)

    @property
    def session_count(self) -> int:
        return len(self._sessions)

    async def list_sessions(self, language: str | None = None) -> list[SessionInfo]:
        await self._expire_sessions()
        name = None if language is None else normalize_language(language)
        return [s.info() for s in self._sessions.values() if name is None or s.language == name]

    async def get_session(self, session_id: str, language: str | None = None) -> SessionInfo:
        await self._expire_sessions()
        return self._find(session_id, language).info()

    async def update_session(
        self,
        session_id: str,
        language: str | None = None,
        *,
        cwd: str | None = None,
        max_idle: float | None = None,
    ) -> SessionInfo:
        """Change a session's idle limit and/or working directory (its live interpreter moves there)."""
        session = self._find(session_id, language)
        if max_idle is not None and max_idle <= 0:
            raise InvalidCodeRequest("max_idle_time must be a positive number of seconds")
        directory = self._directory(cwd)
        if directory is not None:
            async with session.lock:
                worker = session.worker
                if isinstance(worker, Kernel) and worker.alive:
                    await worker.chdir(directory)
                elif isinstance(worker, Worker) and worker.alive:
                    await worker.run({"code": "", "cwd": directory}, 10.0)
                session.cwd = directory
        if max_idle is not None:
            session.max_idle = max_idle
        return session.info()

    async def delete_session(self, session_id: str, language: str | None = None) -> None:
        session = self._find(session_id, language)
        self._sessions.pop(session.id, None)
        await _close_session(session)

    async def delete_sessions(self, language: str | None = None) -> int:
        name = None if language is None else normalize_language(language)
        doomed = [s for s in self._sessions.values() if name is None or s.language == name]
        for session in doomed:
            self._sessions.pop(session.id, None)
        await asyncio.gather(*(_close_session(s) for s in doomed))
        return len(doomed)

    def _find(self, session_id: str, language: str | None) -> _Session:
        session = self._sessions.get(session_id)
        if session is None or (language is not None and session.language != normalize_language(language)):
            raise CodeSessionNotFound(f"no session {session_id!r}")
        return session

    def _start_reaper(self) -> None:
        """Close idle sessions in the background too, not only when the next call looks: a kernel
        holds tens of MiB, and an agent that went away makes no next call."""
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.create_task(self._reap())

    async def _reap(self) -> None:
        while self._sessions:
            await asyncio.sleep(min(REAP_INTERVAL, *(s.max_idle for s in self._sessions.values())) / 2)
            self._expiring = asyncio.ensure_future(self._expire_sessions())
            await asyncio.shield(self._expiring)

    async def _expire_sessions(self) -> None:
        now = time.time()
        idle = [
            s
            for s in self._sessions.values()
            if s.worker is not None and not s.lock.locked() and now - s.last_used > s.max_idle
        ]
        for session in idle:
            self._sessions.pop(session.id, None)
        await asyncio.gather(*(_close_session(s) for s in idle))

    # -- runtime facts ---------------------------------------------------------------------------

    async def runtime(self, language: str | None) -> RuntimeInfo:
        """The interpreter's executable and version (starting a worker the first time)."""
        name = normalize_language(language)
        runtime = self._runtimes[name]
        if runtime.version is None:
            await self._pools[name].prepare()
        return RuntimeInfo(name, runtime.executable or runtime.program, runtime.version or "unknown")

    async def runtimes(self) -> list[RuntimeInfo]:
        """The runtime of each language whose interpreter starts here (the others left out)."""
        available = []
        for language in Language:
            try:
                available.append(await self.runtime(language))
            except InterpreterUnavailable:
                continue
        return available

    async def kernels(self) -> list[str]:
        """The Jupyter kernel names the Python interpreter answers to: ``python3`` and ``python3.X``."""
        runtime = await self.runtime(Language.PYTHON)
        return ["python3", "python" + ".".join(runtime.version.split(".")[:2])]

    async def kernel(self, name: str | None) -> str:
        """The kernel ``name`` asks for (``python3`` when absent or ``python``); :class:`InvalidCodeRequest`
        for a name no installed interpreter answers to."""
        if name in (None, "", "python3", "python"):
            return "python3"
        available = await self.kernels()
        if name not in available:
            raise InvalidCodeRequest(f"kernel {name!r} is not available; available kernels: {', '.join(available)}")
        return name

    async def node_versions(self) -> list[str]:
        """The Node.js versions a call may ask for: the installed one's major (``node22``)."""
        return [f"node{(await self.runtime(Language.JAVASCRIPT)).version.split('.')[0]}"]

    async def check_node_version(self, version: str | None) -> None:
        """:class:`InvalidCodeRequest` unless ``version`` (``22`` or ``node22``; None: any) is installed."""
        if not version:
            return
        available = await self.node_versions()
        if f"node{version.removeprefix('node')}" not in available:
            raise InvalidCodeRequest(f"Node.js {version} is not installed; available: {', '.join(available)}")

    async def npm_version(self) -> str | None:
        """``npm --version`` (cached), or None without npm."""
        if self._npm_version is None:
            npm = shutil.which("npm", path=self._env.get("PATH"))
            if npm is None:
                return None
            process = await asyncio.create_subprocess_exec(
                npm,
                "--version",
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                stdin=asyncio.subprocess.DEVNULL,
                env=self._env,
                start_new_session=True,
            )
            try:
                out, _ = await asyncio.wait_for(process.communicate(), 20)
            except TimeoutError:
                process.kill()
                await process.wait()
                return None
            self._npm_version = out.decode(errors="replace").strip() or None
        return self._npm_version

    @property
    def active_sessions(self) -> int:
        return len(self._sessions)

    @property
    def spare_kernels(self) -> int:
        return self._kernels.idle

    async def aclose(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        if self._expiring is not None:
            await self._expiring
        await asyncio.gather(*(pool.aclose() for pool in self._pools.values()), self._kernels.aclose())
        await self.delete_sessions()


async def _close_session(session: _Session) -> None:
    if session.worker is not None:
        await session.worker.close()


def _write_files(directory: str, files: Mapping[str, str | None]) -> None:
    for name, content in files.items():
        target = Path(directory, name)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content or "", encoding="utf-8")
        except OSError as exc:
            raise InvalidCodeRequest(f"cannot write {name!r}: {exc.strerror or exc}") from None


def _how_it_ended(returncode: int | None) -> str:
    if returncode is None:
        return "stopped answering"
    if returncode < 0:
        return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


def _loss_note(worker: Worker | Kernel) -> str:
    """Why a session's interpreter is gone, for the call that finds it dead."""
    return (
        f"the session's interpreter {_how_it_ended(worker.process.returncode)} after the last call, "
        "so the session was lost: a fresh "
        "interpreter now runs in its place, without the session's variables, imports and functions. "
        "This code was not run; run it again (after redoing the set-up it needs)"
    )


def _lost(session: _Session, code: str, note: str) -> Execution:
    error = CellError("SessionLost", note, [f"SessionLost: {note}"])
    return Execution(
        language=session.language,
        code=code,
        status="error",
        stdout="",
        stderr="",
        exit_code=1,
        execution_count=0,
        result=None,
        error=error,
        session_id=session.id,
    )


def _out_of_memory(error: CellError, exit_code: int | None, stderr: str) -> bool:
    """Whether a failure looks like the memory limit: Python's ``MemoryError``, or an interpreter
    that died by SIGKILL (the kernel) or SIGABRT (V8's "heap out of memory")."""
    if error.ename == "MemoryError":
        return True
    died = exit_code in (-signal.SIGKILL, -signal.SIGABRT, 128 + signal.SIGKILL, 128 + signal.SIGABRT)
    return error.ename == "ProcessExited" and (died or "out of memory" in stderr)


def _with_memory_hint(error: CellError, limit_mb: int) -> CellError:
    hint = (
        f"the code may have run out of memory: code execution is limited to {limit_mb} MiB of data "
        "per process (AIO_CODE_MEMORY_LIMIT_MB)"
    )
    return CellError(error.ename, f"{error.evalue}; {hint}", [*error.traceback, f"{error.ename}: {hint}"])


def _execution(
    language: str,
    code: str,
    outcome: Outcome,
    seconds: float,
    session_id: str | None,
    *,
    kept: bool,
    memory_limit_mb: int | None = None,
) -> Execution:
    reply = outcome.reply or {}
    error = CellError(**reply["error"]) if reply.get("error") else None
    status = str(reply.get("status", "error"))
    exit_code = reply.get("exit_code", outcome.returncode)
    if outcome.timed_out:
        status = "timeout"
        note = f"Execution timed out after {seconds:g} second{'' if seconds == 1 else 's'}"
        if session_id is not None:
            note += (
                "; the cell was interrupted, the session keeps its state"
                if kept
                else "; the session's interpreter was restarted and its state is lost"
            )
        lines = error.traceback if error is not None and error.ename != "ProcessExited" else []
        error = CellError("TimeoutError", note, [*lines, f"TimeoutError: {note}"])
        exit_code = exit_code if exit_code is not None else -9
    elif outcome.reply is None:
        returncode = outcome.returncode
        note = f"the interpreter process {_how_it_ended(returncode)}"
        if session_id is not None:
            note += "; the session will start a fresh interpreter on its next call"
        status, error = "error", CellError("ProcessExited", note, [f"ProcessExited: {note}"])
        exit_code = returncode if returncode is not None else -1
    if error is not None and memory_limit_mb and _out_of_memory(error, exit_code, outcome.stderr):
        error = _with_memory_hint(error, memory_limit_mb)
    return Execution(
        language=language,
        code=code,
        status=status,
        stdout=outcome.stdout,
        stderr=outcome.stderr,
        exit_code=int(exit_code if exit_code is not None else 0),
        execution_count=int(reply.get("execution_count") or 1),
        result=reply.get("result"),
        error=error,
        session_id=session_id,
        displays=tuple(reply.get("displays") or ()),
    )


def _kernel_execution(
    session: _Session, code: str, outcome: KernelOutcome, seconds: float, kernel: Kernel, memory_limit_mb: int | None
) -> Execution:
    """A kernel's cell as an ``Execution``: its outputs in the kernel's order, the streams' text, the
    result's bundle; a timeout or the kernel's death (the session's rule: lost, restarted) said so."""
    outputs = list(outcome.outputs)
    errors = [o for o in outputs if o["output_type"] == "error"]
    error = CellError(errors[-1]["ename"], errors[-1]["evalue"], errors[-1]["traceback"]) if errors else None
    results = [o for o in outputs if o["output_type"] == "execute_result"]
    status = "error" if error is not None else "ok"
    exit_code = 1 if error is not None else 0
    if outcome.truncated:
        note = f"[output truncated at {OUTPUT_CHARS} characters]\n"
        outputs.append({"output_type": "stream", "name": "stderr", "text": note})
    if outcome.timed_out:
        status, exit_code = "timeout", -9 if outcome.reply is None else 1
        note = f"Execution timed out after {seconds:g} second{'' if seconds == 1 else 's'}" + (
            "; the cell was interrupted, the session keeps its state"
            if kernel.alive
            else "; the session's kernel was killed and its state is lost"
        )
        lines = error.traceback if error is not None else []  # the kernel's KeyboardInterrupt
        error = CellError("TimeoutError", note, [*lines, f"TimeoutError: {note}"])
        timeout = {"output_type": "error", "ename": error.ename, "evalue": note, "traceback": [error.traceback[-1]]}
        outputs.append(timeout)
    elif outcome.reply is None:
        returncode = kernel.process.returncode
        note = f"the kernel {_how_it_ended(returncode)}; the session will start a fresh kernel on its next call"
        status, exit_code = "error", returncode if returncode is not None else -1
        error = CellError("ProcessExited", note, [f"ProcessExited: {note}"])
        if memory_limit_mb and _out_of_memory(error, returncode, ""):
            error = _with_memory_hint(error, memory_limit_mb)
        outputs.append(
            {"output_type": "error", "ename": error.ename, "evalue": error.evalue, "traceback": error.traceback}
        )
    return Execution(
        language=session.language,
        code=code,
        status=status,
        stdout=outcome.stream("stdout"),
        stderr="".join(o["text"] for o in outputs if o["output_type"] == "stream" and o["name"] == "stderr"),
        exit_code=int(exit_code),
        execution_count=session.execution_count,
        result=dict(results[-1]["data"]) if results else None,
        error=error,
        session_id=session.id,
        displays=tuple(o for o in outputs if o["output_type"] == "display_data"),
        ordered=tuple(outputs),
    )
