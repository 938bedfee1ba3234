"""The Python interpreter worker, run by the gateway as ``python3 -c <this file's source> MODE IN OUT TOKEN``.

It is a standalone script for whatever ``python3`` the sandbox has (3.9+, standard library only, IPython
when it is there); the gateway never imports it. Requests arrive as JSON lines on fd IN, answers leave
as JSON lines on fd OUT, so fds 0/1/2 stay the user's: stdin is /dev/null, stdout and stderr are pipes
the gateway drains.
After each cell the worker writes an end marker (TOKEN and the request id) to stdout and stderr, so
the gateway knows it has every byte the cell printed, subprocesses' output included.

MODE ``fork`` (stateless calls): a fork server. Each request runs in a freshly forked child in its own
session, so no state survives a call and a timeout kills only that child; the server itself never runs
user code, which keeps every child pristine and costs a fork instead of an interpreter start-up (and
not even that on the call's path: the next call's child is forked, waiting, before it comes). The
child writes to pipes of its own, relayed by the server until the call ends.
MODE ``inline`` (sessions without ipykernel): requests run in this process, in one persistent
``__main__`` namespace.

Where IPython is importable, values and ``display()`` calls are Jupyter MIME bundles made by IPython's
own formatter and a display publisher that collects them (matplotlib's inline backend included, so
``plt.show()`` is an ``image/png``), the same shapes an ipykernel session answers with.
"""

from __future__ import annotations  # annotations are never evaluated: they must not break Python 3.9

import ast
import inspect
import json
import linecache
import os
import signal
import sys
import traceback
import types

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is for the checker only: the worker imports nothing it does not use
    import asyncio
    from collections.abc import Mapping
    from typing import Any, TypedDict

    #: The ``error`` of a reply: a Jupyter-style exception.
    class ErrorInfo(TypedDict):
        ename: str
        evalue: str
        traceback: list[str]

    #: A cell's reply (before the server adds ``event`` and ``id``).
    class Reply(TypedDict):
        status: str
        exit_code: int
        execution_count: int
        result: dict[str, Any] | None
        displays: list[dict[str, Any]]
        error: ErrorInfo | None


#: Longest ``execute_result`` text or error value sent back (characters).
TEXT_LIMIT = 2_000_000
#: Libraries the fork server imports itself once a call has used them, so the children forked after
#: that have them loaded (a stateless figure then skips matplotlib's import, most of its time).
PRELOAD = ("numpy", "pandas", "matplotlib.pyplot")


class Channel:
    """The control pipes; hidden from programs the user's code starts."""

    def __init__(self, in_fd: int, out_fd: int) -> None:
        os.set_inheritable(in_fd, False)
        os.set_inheritable(out_fd, False)
        self.in_fd = in_fd
        self.requests = os.fdopen(in_fd, "rb")
        self.out_fd = out_fd

    def send(self, message: Mapping[str, object]) -> None:
        write_all(self.out_fd, encode(message))


def encode(message: Mapping[str, object]) -> bytes:
    """One JSON line; a value JSON cannot carry (in a user's ``application/json``) as its repr."""
    return (json.dumps(message, default=repr) + "\n").encode()


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def user_streams() -> None:
    """sys.stdout/sys.stderr writing straight through to fds 1/2, so output order matches the fds'."""
    import io

    def stream(fd: int) -> io.TextIOWrapper:
        raw = io.FileIO(fd, "w", closefd=False)
        return io.TextIOWrapper(raw, encoding="utf-8", errors="backslashreplace", write_through=True)

    sys.stdout = sys.__stdout__ = stream(1)  # type: ignore[misc]  # so even code using __stdout__ is seen
    sys.stderr = sys.__stderr__ = stream(2)  # type: ignore[misc]


def flush_user_streams() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:  # ``__stdout__``/``__stderr__`` may be None
                stream.flush()
        except Exception:
            pass


def write_markers(token: str, request_id: int) -> None:
    marker = f"\x00agentbox-end:{token}:{request_id}\x00".encode()
    for fd in (1, 2):
        try:
            write_all(fd, marker)
        except OSError:
            pass  # the user closed the fd; the gateway stops waiting after a grace period


def clean(text: str, limit: int = TEXT_LIMIT) -> str:
    """Valid UTF-8 (lone surrogates escaped), cut to ``limit`` characters."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if len(text) > limit:
        text = text[:limit] + f"\n[... {len(text) - limit} characters omitted]"
    return text


class Displays:
    """Jupyter's display model, when IPython is importable: a trailing value is formatted by IPython
    into a MIME bundle, and ``display()`` (and matplotlib's inline backend) publish ``display_data``
    here. Without IPython a value is its ``text/plain`` repr and there is no ``display()``."""

    def __init__(self) -> None:
        self.shell: Any = None
        self.outputs: list[dict[str, Any]] = []

    def install(self) -> None:
        """Set up IPython once (in the fork server: every child inherits it for free)."""
        try:
            from importlib.util import find_spec

            from IPython.core.displaypub import DisplayPublisher
            from IPython.core.interactiveshell import InteractiveShell
            from traitlets.config import Config
        except Exception:
            return
        if "MPLBACKEND" not in os.environ and find_spec("matplotlib_inline") is not None:
            os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
        outputs = self.outputs

        class Publisher(DisplayPublisher):
            def publish(self, data: Any, metadata: Any = None, *args: Any, **kwargs: Any) -> None:
                outputs.append({"output_type": "display_data", "data": bounded(data), "metadata": metadata or {}})

            def clear_output(self, wait: bool = False) -> None:
                outputs.clear()

        config = Config()
        config.HistoryManager.enabled = False
        shell = InteractiveShell.instance(config=config)
        shell.display_pub = Publisher(shell=shell)  # type: ignore[no-untyped-call]
        self.shell = shell

    def format(self, value: object) -> dict[str, Any]:
        if self.shell is None:
            return {"text/plain": clean(repr(value))}
        data, _ = self.shell.display_formatter.format(value)
        return bounded(data)

    def finish(self) -> list[dict[str, Any]]:
        """What the cell displayed, after IPython's post-execute hooks (matplotlib's inline backend
        shows the figures the cell drew and did not show)."""
        if self.shell is not None:
            try:
                self.shell.events.trigger("post_execute")
            except Exception:
                pass
        done = list(self.outputs)
        self.outputs.clear()
        return done


def bounded(data: Mapping[str, Any]) -> dict[str, Any]:
    """A MIME bundle within the output cap: text/plain is cut, a larger image or document dropped."""
    kept: dict[str, Any] = {}
    for mime, value in data.items():
        if isinstance(value, str):
            if mime == "text/plain":
                value = clean(value)
            elif len(value) > TEXT_LIMIT:
                continue
        kept[mime] = value
    return kept


def fresh_main() -> dict[str, Any]:
    """A new ``__main__`` module, so pickling and dataclasses find the user's definitions."""
    module = types.ModuleType("__main__")
    module.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = module
    return module.__dict__


class Cell:
    """Runs code Jupyter-style: statements, then the value of a trailing expression; top-level await."""

    def __init__(self, displays: Displays) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.displays = displays

    def run(self, code: str, filename: str, namespace: dict[str, Any]) -> dict[str, Any] | None:
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        tree = ast.parse(code, filename=filename, mode="exec")
        tail = tree.body[-1] if tree.body else None
        last = None
        if isinstance(tail, ast.Expr):
            tree.body.pop()
            last = ast.Expression(tail.value)
        self.evaluate(compile(tree, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT), namespace)
        if last is None:
            return None
        value = self.evaluate(compile(last, filename, "eval", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT), namespace)
        if value is None:
            return None
        namespace["_"] = value
        return self.displays.format(value)

    def evaluate(self, code: types.CodeType, namespace: dict[str, Any]) -> object:
        value = eval(code, namespace)
        if code.co_flags & inspect.CO_COROUTINE:
            value = self.event_loop().run_until_complete(value)
        return value

    def event_loop(self) -> asyncio.AbstractEventLoop:
        if self.loop is None:
            import asyncio

            self.loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self.loop)
        return self.loop


def describe(exc: BaseException, filename: str) -> ErrorInfo:
    """ename/evalue/traceback with the worker's own frames cut off."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    return {
        "ename": type(exc).__name__,
        "evalue": clean(str(exc)),
        "traceback": clean(text).rstrip("\n").split("\n"),
    }


def exit_status(code: object) -> int:
    """The exit status ``python3 -c`` would end with after ``SystemExit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def execute(request: dict[str, Any], namespace: dict[str, Any], count: int, cell: Cell) -> Reply:
    filename = f"<cell-{count}>"
    result = error = None
    exit_code = 0
    try:
        if request.get("cwd"):
            os.chdir(request["cwd"])
        result = cell.run(request["code"], filename, namespace)
    except SystemExit as exc:
        exit_code = exit_status(exc.code)
        if exit_code:
            error = describe(exc, filename)
    except BaseException as exc:
        exit_code = 1
        error = describe(exc, filename)
    displays = cell.displays.finish()
    return {
        "status": "error" if error else "ok",
        "exit_code": exit_code,
        "execution_count": count,
        "result": result,
        "displays": displays,
        "error": error,
    }


def wait_for_threads() -> None:
    """Like interpreter exit: let non-daemon threads the code started finish (within the timeout)."""
    threading = sys.modules.get("threading")
    if threading is None:
        return
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()


def serve_forked(channel: Channel, token: str, displays: Displays) -> None:
    """Each request is read by a child forked before it came (the first one once the first request
    is there, so after the gateway has set this process's limits): the call pays neither the fork
    nor the child's set-up, and goes from the gateway to the child without waking the server. The
    server relays the child's output, sends the reply, and reaps the child after that."""
    import select

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    select.select([channel.in_fd], [], [])
    while True:
        pid, pipes = fork_child(channel, displays)
        started, data = relay(*pipes)
        if started is None:  # it ended before taking a request
            if reap(pid) >= 0:
                return  # 0: the gateway closed the request pipe; else a broken set-up, not retried
            continue  # killed while it waited: the request, if any, is still in the pipe
        request_id = json.loads(started)["id"]
        code = None if data.strip() else reap(pid)
        reply: dict[str, Any] = json.loads(data) if code is None else dict(exited(code))
        used = reply.pop("imported", [])  # the child's note for this server, not for the gateway
        write_markers(token, request_id)
        channel.send(dict(reply, event="reply", id=request_id))
        if code is None:
            reap(pid)
        preload(used)


def preload(names: list[str]) -> None:
    """Import what a call used of :data:`PRELOAD` here, before the next child is forked."""
    import importlib

    for name in names:
        if name in PRELOAD and name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:
                pass  # the children import it themselves, and say why it fails


def fork_child(channel: Channel, displays: Displays) -> tuple[int, list[int]]:
    """A child in its own session that will take the next request; returns its pid and the
    server's ends of its stdout, stderr and answer pipes."""
    pipes = [os.pipe() for _ in range(3)]
    pid = os.fork()
    if pid == 0:
        run_child(channel, pipes, displays)
    for _, write_fd in pipes:
        os.close(write_fd)
    return pid, [read_fd for read_fd, _ in pipes]


def reap(pid: int) -> int:
    """Wait for the child to end; its exit status as ``python3 -c`` reports it."""
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def relay(out_fd: int, err_fd: int, answer_fd: int) -> tuple[bytes | None, bytes]:
    """Copy the child's output to our stdout/stderr until it has answered (or died), then what is
    left, and close the pipes. The child writes to pipes of its own, not ours, so a background
    process it leaves behind cannot write into a later call's output (it gets EPIPE instead).
    Returns the child's two answer lines: the request it took (None if none) and its reply."""
    import select

    targets = {out_fd: 1, err_fd: 2}
    answer = b""
    lines = 0
    answering = True
    while answering and lines < 2:
        ready, _, _ = select.select([answer_fd, *targets], [], [])
        for fd in ready:
            chunk = os.read(fd, 65536)
            if fd == answer_fd:
                answer += chunk
                lines += chunk.count(b"\n")
                answering = bool(chunk)
            elif chunk:
                write_all(targets[fd], chunk)
            else:
                os.close(fd)
                del targets[fd]
    os.close(answer_fd)
    for fd, target in targets.items():
        os.set_blocking(fd, False)
        try:
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                write_all(target, chunk)
        except BlockingIOError:
            pass
        os.close(fd)
    started, newline, reply = answer.partition(b"\n")
    return (started if newline else None), reply


def run_child(channel: Channel, pipes: list[tuple[int, int]], displays: Displays) -> None:
    """In the forked child: set up, take one request from the gateway, tell it and the server, run
    the cell, answer the server, exit. Never returns; exits with 0 when the gateway has closed the
    request pipe."""
    code = 1
    try:
        os.setsid()
        (out_read, out_write), (err_read, err_write), (answer_read, answer_write) = pipes
        os.dup2(out_write, 1)
        os.dup2(err_write, 2)
        for fd in (out_read, out_write, err_read, err_write, answer_read):
            os.close(fd)
        namespace = fresh_main()
        warm_up()
        line = read_line(channel.in_fd)
        channel.requests.close()
        if not line:
            code = 0
            return
        request = json.loads(line)
        started = {"event": "started", "id": request["id"], "pid": os.getpid()}
        write_all(answer_write, encode(started))
        channel.send(started)
        os.close(channel.out_fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        reply = execute(request, namespace, 1, Cell(displays))
        wait_for_threads()
        flush_user_streams()
        code = reply["exit_code"]
        imported = [name for name in PRELOAD if name in sys.modules]
        write_all(answer_write, encode(dict(reply, imported=imported)))
    finally:
        flush_user_streams()
        os._exit(code & 0xFF)


def warm_up() -> None:
    """Take the copy-on-write page faults of parsing, compiling, running and answering now, while
    the child waits, not on the call's path; nothing of it stays in the child's namespace."""
    tree = ast.parse("x = 1\nx", filename="<warm-up>", mode="exec")
    tree.body.pop()
    eval(compile(tree, "<warm-up>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT), {})
    json.loads(encode({"status": "ok", "exit_code": 0, "result": None, "displays": [], "error": None}))


def read_line(fd: int) -> bytes:
    """One request line from the gateway's pipe, read unbuffered so nothing after it is taken (the
    gateway sends the next request only after this one's reply); empty when the pipe is closed."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 65536)
        if not chunk:
            return b""
        data += chunk
    return data


def exited(code: int) -> Reply:
    """The answer for a child that ended without sending one (``os._exit``, a signal)."""
    if code == 0:
        return {"status": "ok", "exit_code": 0, "execution_count": 1, "result": None, "displays": [], "error": None}
    reason = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
    message = f"the interpreter process {reason}"
    error: ErrorInfo = {"ename": "ProcessExited", "evalue": message, "traceback": ["ProcessExited: " + message]}
    return {
        "status": "error",
        "exit_code": code,
        "execution_count": 1,
        "result": None,
        "displays": [],
        "error": error,
    }


def serve_inline(channel: Channel, token: str, displays: Displays) -> None:
    """The gateway interrupts a cell that overruns its timeout with SIGINT (KeyboardInterrupt, state
    kept); between cells SIGINT is ignored, so a late one cannot take the session down."""
    namespace = fresh_main()
    cell = Cell(displays)
    count = 0
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for line in channel.requests:
        request = json.loads(line)
        count += 1
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            reply = execute(request, namespace, count, cell)
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        flush_user_streams()
        write_markers(token, request["id"])
        channel.send(dict(reply, event="reply", id=request["id"]))


def main(argv: list[str]) -> None:
    mode, in_fd, out_fd, token = argv
    channel = Channel(int(in_fd), int(out_fd))
    sys.argv = [""]
    user_streams()
    displays = Displays()
    displays.install()
    channel.send(
        {
            "event": "ready",
            "pid": os.getpid(),
            "executable": sys.executable,
            "version": "{}.{}.{}".format(*sys.version_info[:3]),
            "rich": displays.shell is not None,
            "ipykernel": has_module("ipykernel"),
        }
    )
    if mode == "fork":
        serve_forked(channel, token, displays)
    else:
        serve_inline(channel, token, displays)


def has_module(name: str) -> bool:
    from importlib.util import find_spec

    try:
        return find_spec(name) is not None
    except (ImportError, ValueError):
        return False


if __name__ == "__main__":
    main(sys.argv[1:])
