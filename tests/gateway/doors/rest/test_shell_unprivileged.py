"""The REST shell as the image runs it: ``aiod start`` as a non-root user (so the gateway is
non-dumpable and its ``/proc/<pid>/fd`` is closed to its own shells), driven by the agent-sandbox SDK.

Run as root (as the suite usually is), the gateway is started as ``nobody`` with ``setpriv``; as
any other user, it runs as that user."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import pytest
from agent_sandbox import Sandbox

from tests.support.requirements import missing
from tests.support.servers import console_script, free_port, run_command


def _as_nobody(command: list[str], home: str) -> list[str]:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        missing("setpriv (util-linux) is needed to run the gateway as a non-root user")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        missing("there is no 'nobody' user to run the gateway as")
    as_nobody = [setpriv, f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups"]
    probe = subprocess.run(
        [*as_nobody, sys.executable, "-c", "import agentbox_gateway"], capture_output=True, timeout=60
    )
    if probe.returncode:
        missing(f"'nobody' cannot run this checkout's Python: {probe.stderr.decode(errors='replace')[-300:]}")
    os.chown(home, nobody.pw_uid, nobody.pw_gid)
    return [*as_nobody, *command]


@pytest.fixture(scope="module")
def unprivileged_gateway() -> Iterator[str]:
    home = tempfile.mkdtemp(prefix="agentbox-nobody-")
    command = [console_script("aiod"), "start"]
    try:
        if os.geteuid() == 0:
            command = _as_nobody(command, home)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        with run_command([*command, "--port", str(port)], env={"HOME": home}, ready_url=f"{url}/health"):
            yield url
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def sandbox(unprivileged_gateway: str) -> Sandbox:
    return Sandbox(base_url=unprivileged_gateway, timeout=30)


def test_shell_exec_runs_commands(sandbox: Sandbox) -> None:
    data = sandbox.shell.exec_command(command="echo hello; id -u").data
    assert (data.status, data.exit_code) == ("completed", 0), data.output
    greeting, uid = data.output.splitlines()
    assert greeting == "hello"
    assert uid != "0", "the gateway must run as a non-root user here"


def test_shell_exec_feeds_stdin(sandbox: Sandbox) -> None:
    started = sandbox.shell.exec_command(command="read -r name; echo hi $name", async_mode=True).data
    sandbox.shell.write_to_process(id=started.session_id, input="ada", press_enter=True)
    assert sandbox.shell.wait_for_process(id=started.session_id, seconds=10).data.status == "completed"
    assert sandbox.shell.view(id=started.session_id).data.output == "hi ada\n"


def test_bash_exec_with_timeout_and_async_write(sandbox: Sandbox) -> None:
    timed = sandbox.bash.exec(command="echo out; echo err >&2", timeout=10).data
    assert (timed.status, timed.exit_code, timed.stdout, timed.stderr) == ("completed", 0, "out\n", "err\n")
    started = sandbox.bash.exec(command="cat | tr a-z A-Z", async_mode=True).data
    assert started.status == "running"
    sandbox.bash.write(session_id=started.session_id, input="shout\n\x04")
    deadline = time.monotonic() + 10
    while (out := sandbox.bash.output(session_id=started.session_id).data).command.status == "running":
        assert time.monotonic() < deadline, "the command did not end after EOF"
        time.sleep(0.05)
    assert (out.command.exit_code, out.stdout) == (0, "SHOUT\n")
