"""Rich outputs and kernel sessions against the real thing: the test interpreter (which has ipykernel,
IPython, matplotlib and pandas) is the sandbox's ``python3``, so stateless calls run on the fork server
with IPython's display model and sessions on Jupyter kernels driven with jupyter_client."""

from __future__ import annotations

import base64
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentbox_gateway.planes.code import CodePlane, Execution, SessionLimitReached
from agentbox_gateway.settings import GatewaySettings
from tests.support.polling import eventually

PNG = b"\x89PNG\r\n\x1a\n"
pytestmark = pytest.mark.anyio

FIGURE = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"
FRAME = "import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})"


def _sandbox_env() -> dict[str, str]:
    """The environment with the test interpreter's directory first, so its ``python3`` runs the code."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}


@pytest.fixture
async def plane() -> AsyncIterator[CodePlane]:
    settings = GatewaySettings.from_env({"AIO_KERNEL_MAX_SESSIONS": "2"})
    code = CodePlane(settings, env=_sandbox_env())
    try:
        yield code
    finally:
        await code.aclose()


def _ended(pid: int) -> bool:
    """Whether the killed kernel has ended (a zombie or gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] == b"Z"
    except FileNotFoundError:
        return True


def _kinds(execution: Execution) -> list[str]:
    return [output["output_type"] for output in execution.outputs()]


def _png(output: dict[str, Any]) -> bytes:
    return base64.b64decode(output["data"]["image/png"], validate=True)


@pytest.mark.parametrize("session", [None, "s1"], ids=["stateless", "kernel"])
async def test_a_figure_is_a_png_display(plane: CodePlane, session: str | None) -> None:
    run = await plane.execute("python", FIGURE, session_id=session, timeout=120)
    assert run.status == "ok", run
    [figure] = [o for o in run.outputs() if o["output_type"] == "display_data"]
    assert _png(figure).startswith(PNG) and figure["data"]["text/plain"].startswith("<Figure")


@pytest.mark.parametrize("session", [None, "s1"], ids=["stateless", "kernel"])
async def test_a_dataframe_is_an_html_table(plane: CodePlane, session: str | None) -> None:
    run = await plane.execute("python", FRAME, session_id=session, timeout=120)
    assert run.status == "ok" and _kinds(run) == ["execute_result"], run
    data = run.outputs()[0]["data"]
    assert "<table" in data["text/html"] and "a  b" in data["text/plain"]


@pytest.mark.parametrize("session", [None, "s1"], ids=["stateless", "kernel"])
async def test_an_exception_is_an_error_output_with_its_traceback(plane: CodePlane, session: str | None) -> None:
    run = await plane.execute("python", "print('before')\ndef f():\n    1 / 0\nf()", session_id=session)
    assert run.status == "error" and _kinds(run) == ["stream", "error"], run
    error = run.outputs()[-1]
    assert error["ename"] == "ZeroDivisionError" and error["evalue"] == "division by zero"
    text = "\n".join(error["traceback"])
    assert "1 / 0" in text and "\x1b[" not in text  # readable: no terminal colours
    assert run.stdout == "before\n"


async def test_display_calls_and_svg_are_bundles_in_order(plane: CodePlane) -> None:
    code = (
        "from IPython.display import display, HTML, SVG\nprint('a')\ndisplay(HTML('<b>hi</b>'))\n"
        "display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\"/>'))\n{'k': 1}"
    )
    for session in (None, "s1"):
        run = await plane.execute("python", code, session_id=session)
        assert _kinds(run) == ["stream", "display_data", "display_data", "execute_result"], run
        html, svg, result = run.outputs()[1:]
        assert html["data"]["text/html"] == "<b>hi</b>" and "<svg" in svg["data"]["image/svg+xml"]
        assert result["data"]["text/plain"] == "{'k': 1}"


async def test_a_session_keeps_state_and_counts_cells(plane: CodePlane) -> None:
    first = await plane.execute("python", "import pandas as pd\ndf = pd.DataFrame({'v': [1, 2, 3]})", session_id="s")
    second = await plane.execute("python", "print(df.v.sum())", session_id="s")
    assert (first.status, second.stdout, second.execution_count) == ("ok", "6\n", 2)
    [info] = await plane.list_sessions("python")
    assert info.execution_count == 2 and await plane.kernel_backend()


async def test_a_kernel_killed_between_calls_is_reported_lost_then_restarted(plane: CodePlane) -> None:
    await plane.execute("python", "x = 41", session_id="k")
    pid = int((await plane.execute("python", "import os; print(os.getpid())", session_id="k")).stdout)
    os.kill(pid, signal.SIGKILL)
    assert await eventually(lambda: _ended(pid), 20)
    lost = await plane.execute("python", "print(x + 1)", session_id="k")
    assert lost.status == "error" and lost.error is not None and lost.error.ename == "SessionLost", lost
    assert "was killed by signal 9" in lost.error.evalue and lost.stdout == ""
    fresh = await plane.execute("python", "import os; print(os.getpid()); x", session_id="k")
    assert fresh.error is not None and fresh.error.ename == "NameError"
    assert int(fresh.stdout) != pid


async def test_a_kernel_dying_mid_cell_says_so_and_the_next_call_runs(plane: CodePlane) -> None:
    died = await plane.execute("python", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)", session_id="d")
    assert died.status == "error" and died.error is not None and died.error.ename == "ProcessExited", died
    assert "fresh kernel on its next call" in died.error.evalue
    after = await plane.execute("python", "print('back')", session_id="d")
    assert (after.status, after.stdout) == ("ok", "back\n")


async def test_a_timeout_interrupts_the_cell_and_keeps_the_session(plane: CodePlane) -> None:
    await plane.execute("python", "y = 7", session_id="t")
    started = time.monotonic()
    code = "import time\nprint('go', flush=True)\ntime.sleep(60)"
    slow = await plane.execute("python", code, session_id="t", timeout=1)
    assert slow.status == "timeout" and time.monotonic() - started < 30, slow
    assert slow.stdout == "go\n" and "keeps its state" in (slow.error.evalue if slow.error else "")
    assert (await plane.execute("python", "y", session_id="t")).result == {"text/plain": "7"}


async def test_kernel_sessions_are_limited_and_spares_are_kept_warm(plane: CodePlane) -> None:
    await plane.execute("python", "1", session_id="a")
    await plane.execute("python", "1", session_id="b")
    with pytest.raises(SessionLimitReached, match="AIO_KERNEL_MAX_SESSIONS"):
        await plane.execute("python", "1", session_id="c")
    assert await eventually(lambda: plane.spare_kernels == 1, 60)
    await plane.delete_session("a")
    started = time.monotonic()
    await plane.execute("python", "1", session_id="c")  # takes the warm kernel
    assert time.monotonic() - started < 5


async def test_a_huge_image_is_dropped_but_text_is_kept(plane: CodePlane) -> None:
    code = "from IPython.display import display\ndisplay({'image/png': 'A' * 2_100_000, 'text/plain': 'big'}, raw=True)"
    for session in (None, "s1"):
        run = await plane.execute("python", code, session_id=session)
        images = [o for o in run.outputs() if "image/png" in o.get("data", {})]
        assert images == [], run.outputs()[:1]


async def test_a_memory_limit_too_small_for_a_kernel_leaves_sessions_on_the_repl() -> None:
    code = CodePlane(GatewaySettings.from_env({"AIO_CODE_MEMORY_LIMIT_MB": "64"}), env=_sandbox_env())
    try:
        hog = await code.execute("python", "x = 1\nblock = bytearray(128 * 1024 * 1024)", session_id="m")
        assert hog.error is not None and hog.error.ename == "MemoryError" and "64 MiB" in hog.error.evalue
        [info] = await code.list_sessions()
        assert info.backend == "native" and not await code.kernel_backend()
        shown = await code.execute("python", "from IPython.display import HTML\nHTML('<b>x</b>')", session_id="m")
        assert shown.result is not None and shown.result["text/html"] == "<b>x</b>"  # the REPL's display model
    finally:
        await code.aclose()


async def test_the_fork_server_preloads_the_data_stack_a_call_used(plane: CodePlane) -> None:
    probe = "import sys\nprint('matplotlib.pyplot' in sys.modules, 'secret' in globals())"
    assert (await plane.execute("python", probe)).stdout == "False False\n"
    assert (await plane.execute("python", FIGURE + "\nsecret = 1", timeout=120)).status == "ok"
    # the next child is forked from a server that imported pyplot itself: loaded, and still nothing shared
    assert (await plane.execute("python", probe)).stdout == "True False\n"
    shown = await plane.execute("python", FIGURE)
    assert _png(shown.outputs()[0]).startswith(PNG)


async def test_idle_kernel_sessions_are_reaped_without_another_call() -> None:
    settings = GatewaySettings.from_env({"AIO_KERNEL_SESSION_TIMEOUT_SECS": "1", "AIO_KERNEL_PREWARM": "0"})
    code = CodePlane(settings, env=_sandbox_env())
    try:
        pid = int((await code.execute("python", "import os; print(os.getpid())", session_id="idle")).stdout)
        assert code.session_count == 1
        assert await eventually(lambda: code.session_count == 0 and _ended(pid), 30)
    finally:
        await code.aclose()
