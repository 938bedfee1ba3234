"""The code plane on its own: real ``python3`` and ``node`` workers, no HTTP in between."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentbox_gateway.planes.code import (
    CodePlane,
    CodeSessionNotFound,
    InvalidCodeRequest,
    SessionLimitReached,
    UnsupportedLanguage,
)
from agentbox_gateway.settings import GatewaySettings
from tests.support.requirements import needs_program

pytestmark = pytest.mark.anyio

needs_node = needs_program("node", "nodejs")


@pytest.fixture
async def plane(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[CodePlane]:
    monkeypatch.setenv("AIO_API_KEY", "plane-secret")  # must never reach the interpreters
    code = CodePlane(GatewaySettings.from_env({}), max_sessions=3)
    await code.start()
    try:
        yield code
    finally:
        await code.aclose()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"))


async def test_python_prints_and_shows_the_last_expression(plane: CodePlane) -> None:
    run = await plane.execute("python", "import sys\nprint('out')\nprint('err', file=sys.stderr)\n6 * 7")
    assert (run.status, run.exit_code, run.stdout, run.stderr) == ("ok", 0, "out\n", "err\n")
    assert run.result == {"text/plain": "42"}
    assert [o["output_type"] for o in run.outputs()] == ["stream", "stream", "execute_result"]


async def test_python_captures_subprocess_output(plane: CodePlane) -> None:
    run = await plane.execute(
        "python", "import os, subprocess\nprint('a', flush=True)\nos.system('echo b')\nsubprocess.run(['echo', 'c'])"
    )
    assert run.stdout == "a\nb\nc\n"


async def test_huge_output_is_capped_with_a_note(plane: CodePlane) -> None:
    run = await plane.execute("python", "import sys\nsys.stdout.write('x' * 3_000_000)\nprint('done', file=sys.stderr)")
    assert run.status == "ok" and run.stderr == "done\n"
    assert run.stdout.startswith("x" * 2_000_000 + "\n[... 1000000 bytes of output omitted]")


async def test_python_exception_has_a_traceback_without_worker_frames(plane: CodePlane) -> None:
    run = await plane.execute("python", "def f():\n    raise ValueError('boom')\nprint('before')\nf()")
    assert (run.status, run.exit_code, run.stdout) == ("error", 1, "before\n")
    assert run.error is not None and (run.error.ename, run.error.evalue) == ("ValueError", "boom")
    text = run.error.text
    assert text.startswith("Traceback (most recent call last):")
    assert 'File "<cell-1>", line 4, in <module>' in text and "ValueError: boom" in text
    assert "python_driver" not in text and "<string>" not in text
    assert run.outputs()[-1]["output_type"] == "error"


async def test_python_exit_codes(plane: CodePlane) -> None:
    assert (await plane.execute("python", "import sys; sys.exit(0)")).status == "ok"
    failed = await plane.execute("python", "import sys; sys.exit(3)")
    assert (failed.status, failed.exit_code, failed.error.ename) == ("error", 3, "SystemExit")
    hard = await plane.execute("python", "import os; os._exit(4)")
    assert (hard.status, hard.exit_code, hard.error.ename) == ("error", 4, "ProcessExited")


async def test_python_top_level_await(plane: CodePlane) -> None:
    run = await plane.execute("python", "import asyncio\nawait asyncio.sleep(0.01)\nx = await asyncio.sleep(0, 5)\nx")
    assert run.status == "ok" and run.result == {"text/plain": "5"}


async def test_stateless_python_calls_are_isolated_and_warm(plane: CodePlane) -> None:
    first = await plane.execute(
        "python",
        "import os, sys\nsecret = 1\nos.environ['LEAK'] = '1'\n"
        "sys.modules['json'] = None\nprint(os.getpid(), os.getppid())",
    )
    second = await plane.execute(
        "python",
        "import os, json\nprint('secret' in globals(), os.environ.get('LEAK'))\nprint(os.getpid(), os.getppid())",
    )
    assert second.status == "ok", second
    lines = second.stdout.splitlines()
    assert lines[0] == "False None"
    pid1, server1 = first.stdout.split()
    pid2, server2 = lines[1].split()
    assert pid1 != pid2  # a fresh process per call...
    assert server1 == server2  # ...forked from the same warm server, not a cold interpreter


async def test_background_output_does_not_leak_into_the_next_call(plane: CodePlane) -> None:
    first = await plane.execute(
        "python", "import subprocess\nsubprocess.Popen(['sh', '-c', 'sleep 0.3; echo LATE'])\nprint('first')"
    )
    assert first.stdout == "first\n"
    second = await plane.execute("python", "import time\ntime.sleep(0.8)\nprint('second')")
    assert (second.stdout, second.stderr) == ("second\n", "")


async def test_timeout_kills_the_process_group_and_the_next_call_works(plane: CodePlane) -> None:
    started = time.monotonic()
    run = await plane.execute(
        "python",
        "import subprocess\nchild = subprocess.Popen(['sleep', '60'])\nprint(child.pid, flush=True)\nwhile True: pass",
        timeout=1,
    )
    assert time.monotonic() - started < 6
    assert run.status == "timeout" and run.error is not None and run.error.ename == "TimeoutError"
    assert "timed out after 1 second" in run.error.evalue
    child = int(run.stdout.split()[0])
    for _ in range(100):  # the kill is immediate; allow a moment for the reaper
        if not _pid_alive(child):
            break
        await asyncio.sleep(0.05)
    assert not _pid_alive(child)
    after = await plane.execute("python", "print('still here')")
    assert (after.status, after.stdout) == ("ok", "still here\n")


async def test_secret_is_not_in_the_interpreters_environment(plane: CodePlane) -> None:
    assert os.environ["AIO_API_KEY"] == "plane-secret"
    run = await plane.execute("python", "import os; print(os.environ.get('AIO_API_KEY'))")
    assert run.stdout == "None\n"
    session = await plane.execute("python", "import os; print(os.environ.get('AIO_API_KEY'))", stateful=True)
    assert session.stdout == "None\n"


async def test_python_session_keeps_state_and_survives_an_interrupted_cell(plane: CodePlane, tmp_path: Path) -> None:
    first = await plane.execute("python", "import os\nx = 41", stateful=True, cwd=str(tmp_path))
    sid = first.session_id
    assert sid and first.status == "ok"
    second = await plane.execute("python", "x + 1", session_id=sid)
    assert second.result == {"text/plain": "42"} and second.execution_count == 2
    assert (await plane.execute("python", "print(os.getcwd())", session_id=sid)).stdout == f"{tmp_path}\n"
    stuck = await plane.execute("python", "while True: pass", session_id=sid, timeout=1)
    assert stuck.status == "timeout" and "keeps its state" in stuck.error.evalue
    assert any("KeyboardInterrupt" in line for line in stuck.error.traceback)
    assert (await plane.execute("python", "x", session_id=sid)).result == {"text/plain": "41"}


async def test_a_session_that_ignores_the_interrupt_is_restarted(plane: CodePlane) -> None:
    code = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: time.sleep(0.05)"
    sid = (await plane.execute("python", "y = 1", stateful=True)).session_id
    stuck = await plane.execute("python", code, session_id=sid, timeout=1)
    assert stuck.status == "timeout" and "state is lost" in stuck.error.evalue
    fresh = await plane.execute("python", "print('y' in globals())", session_id=sid)
    assert (fresh.status, fresh.stdout) == ("ok", "False\n")


def _reaped(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists()


async def wait_reaped(pid: int) -> None:
    """Until the killed interpreter is gone and reaped (so the plane has seen it die)."""
    for _ in range(200):
        if _reaped(pid):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"process {pid} is still there")


@pytest.mark.parametrize(
    "language, setup, pid_code, probe",
    [
        ("python", "x = 1", "import os; os.getpid()", "x"),
        pytest.param("javascript", "var x = 1", "process.pid", "x", marks=needs_node),
    ],
)
async def test_a_session_whose_interpreter_died_says_it_was_lost(
    plane: CodePlane, language: str, setup: str, pid_code: str, probe: str
) -> None:
    sid = (await plane.execute(language, setup, stateful=True)).session_id
    pid = int((await plane.execute(language, pid_code, session_id=sid)).result["text/plain"])
    os.kill(pid, signal.SIGKILL)
    await wait_reaped(pid)
    lost = await plane.execute(language, probe, session_id=sid)
    assert (lost.status, lost.error.ename) == ("error", "SessionLost")
    assert "killed by signal 9" in lost.error.evalue and "was not run" in lost.error.evalue
    again = await plane.execute(language, "1 + 1", session_id=sid)
    assert (again.status, again.result, again.execution_count) == ("ok", {"text/plain": "2"}, 1)


async def test_memory_limit_stops_python_with_a_clear_error(tmp_path: Path) -> None:
    code = CodePlane(GatewaySettings.from_env({"AIO_CODE_MEMORY_LIMIT_MB": "64"}))
    try:
        hog = "block = bytearray(128 * 1024 * 1024)"
        for run in (await code.execute("python", hog), await code.execute("python", hog, stateful=True)):
            assert (run.status, run.error.ename) == ("error", "MemoryError")
            assert "64 MiB" in run.error.evalue and "AIO_CODE_MEMORY_LIMIT_MB" in run.error.text
        assert (await code.execute("python", "print('fine')")).stdout == "fine\n"
        small = await code.execute("python", "len(bytearray(8 * 1024 * 1024))", session_id=run.session_id)
        assert small.result == {"text/plain": "8388608"}
    finally:
        await code.aclose()


@needs_node
async def test_memory_limit_stops_javascript_and_the_next_call_works() -> None:
    code = CodePlane(GatewaySettings.from_env({"AIO_CODE_MEMORY_LIMIT_MB": "64"}))
    try:
        hog = "const a = []; for (let i = 0; i < 64; i++) a.push(new Array(512 * 1024).fill(i)); console.log(a.length)"
        run = await code.execute("javascript", hog)
        assert (run.status, run.error.ename) == ("error", "ProcessExited")
        assert "AIO_CODE_MEMORY_LIMIT_MB" in run.error.evalue
        assert (await code.execute("javascript", "console.log('fine')")).stdout == "fine\n"
    finally:
        await code.aclose()


async def test_sessions_are_limited_listed_and_deleted(plane: CodePlane) -> None:
    info, created = await plane.create_session("python", "one")
    assert created and info.session_id == "one" and info.state == "IDLE"
    again, created_again = await plane.create_session("python", "one")
    assert not created_again and again.session_id == "one"
    await plane.create_session("python", "two")
    await plane.create_session("python", "three")
    with pytest.raises(SessionLimitReached, match="3 sessions"):
        await plane.create_session("python", "four")
    assert {s.session_id for s in await plane.list_sessions("python")} == {"one", "two", "three"}
    await plane.delete_session("two")
    with pytest.raises(CodeSessionNotFound):
        await plane.delete_session("two")
    assert await plane.delete_sessions("python") == 2
    assert await plane.list_sessions() == []


async def test_idle_sessions_expire(plane: CodePlane) -> None:
    await plane.create_session("python", "brief", max_idle=0.2)
    await asyncio.sleep(0.3)
    with pytest.raises(CodeSessionNotFound):
        await plane.get_session("brief")


async def test_kernel_names_follow_the_installed_python(plane: CodePlane) -> None:
    minor = "python" + ".".join((await plane.runtime("python")).version.split(".")[:2])
    assert await plane.kernels() == ["python3", minor]
    assert [await plane.kernel(name) for name in (None, "", "python", minor)] == [
        "python3",
        "python3",
        "python3",
        minor,
    ]
    with pytest.raises(
        InvalidCodeRequest, match=f"kernel 'julia' is not available; available kernels: python3, {minor}"
    ):
        await plane.kernel("julia")


@needs_node
async def test_node_versions_are_the_installed_major(plane: CodePlane) -> None:
    major = (await plane.runtime("node")).version.split(".")[0]
    assert await plane.node_versions() == [f"node{major}"]
    for version in (None, "", major, f"node{major}"):
        await plane.check_node_version(version)
    with pytest.raises(InvalidCodeRequest, match=f"Node.js node8 is not installed; available: node{major}"):
        await plane.check_node_version("node8")
    assert [runtime.language for runtime in await plane.runtimes()] == ["python", "javascript"]


async def test_bad_requests_are_refused(plane: CodePlane) -> None:
    with pytest.raises(UnsupportedLanguage, match="supported languages: python, javascript"):
        await plane.execute("ruby", "puts 1")
    with pytest.raises(InvalidCodeRequest, match="timeout"):
        await plane.execute("python", "print(1)", timeout=0)
    with pytest.raises(InvalidCodeRequest, match="not an existing directory"):
        await plane.execute("python", "print(1)", cwd="/no/such/dir")
    with pytest.raises(InvalidCodeRequest, match="session_id"):
        await plane.create_session("python", "bad id/../x")
    sid = (await plane.execute("python", "1", stateful=True)).session_id
    with pytest.raises(InvalidCodeRequest, match="runs python"):
        await plane.execute("javascript", "1", session_id=sid)


@needs_node
async def test_javascript_runs_like_node_e(plane: CodePlane) -> None:
    run = await plane.execute(
        "javascript", "setTimeout(() => console.log('later'), 20);\nconsole.log('now');\nconsole.error('warn');"
    )
    assert (run.status, run.exit_code, run.stdout, run.stderr) == ("ok", 0, "now\nlater\n", "warn\n")
    awaited = await plane.execute("js", "const v = await Promise.resolve(7);\nconsole.log(v)")
    assert awaited.stdout == "7\n"
    piped = await plane.execute(
        "javascript", "process.stdout.write(require('fs').readFileSync(0, 'utf8'))", stdin="from stdin"
    )
    assert piped.stdout == "from stdin"


@needs_node
async def test_javascript_exception_has_a_stack(plane: CodePlane) -> None:
    code = "console.log('before');\nfunction f() { throw new TypeError('bad'); }\nf();"
    run = await plane.execute("javascript", code)
    assert (run.status, run.exit_code, run.stdout) == ("error", 1, "before\n")
    assert (run.error.ename, run.error.evalue) == ("TypeError", "bad")
    assert "TypeError: bad" in run.error.text and "<cell-1>:2" in run.error.text
    assert "[eval]" not in run.error.text and "node:" not in run.error.text


@needs_node
async def test_stateless_javascript_calls_are_isolated(plane: CodePlane) -> None:
    first = await plane.execute("javascript", "globalThis.leak = 1; process.env.LEAK = '1'; console.log(process.pid)")
    second = await plane.execute("javascript", "console.log(typeof leak, process.env.LEAK, process.pid)")
    kind, env, pid = second.stdout.split()
    assert (kind, env) == ("undefined", "undefined") and pid != first.stdout.strip()
    secret = await plane.execute("javascript", "console.log(String(process.env.AIO_API_KEY))")
    assert secret.stdout == "undefined\n"


@needs_node
async def test_javascript_timeout_and_recovery(plane: CodePlane) -> None:
    run = await plane.execute("javascript", "console.log('spin'); while (true) {}", timeout=1)
    assert run.status == "timeout" and run.stdout == "spin\n"
    assert (await plane.execute("javascript", "console.log(1 + 1)")).stdout == "2\n"


@needs_node
async def test_javascript_session_keeps_state(plane: CodePlane) -> None:
    info, _ = await plane.create_session("javascript", "js1")
    sid = info.session_id
    await plane.execute("javascript", "let a = 1; var b = 2; function add() { return a + b; }", session_id=sid)
    assert (await plane.execute("javascript", "add()", session_id=sid)).result == {"text/plain": "3"}
    stuck = await plane.execute("javascript", "while (true) {}", session_id=sid, timeout=1)
    assert stuck.status == "timeout" and "keeps its state" in stuck.error.evalue
    awaited = await plane.execute("javascript", "globalThis.c = await Promise.resolve(a + 10)", session_id=sid)
    assert awaited.status == "ok"
    assert (await plane.execute("javascript", "c", session_id=sid)).result == {"text/plain": "11"}
