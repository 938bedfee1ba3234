"""The image's REST API driven by the public ``agent-sandbox`` SDK, as its users drive it: shell
(``/v1/shell/exec``; ``/v1/bash/exec`` with ``timeout`` and ``async_mode``; ``/v1/bash/write``), files,
code and context. The gateway in the image is non-root and non-dumpable, unlike the bare gateway of
tests/gateway, so this is where a command that cannot open its own stdin shows up."""

from __future__ import annotations

import pytest
from agent_sandbox import Sandbox

from tests.support.polling import until

from .conftest import API_KEY
from .dockerbox import Box

pytestmark = pytest.mark.docker


@pytest.fixture
def sandbox(box: Box) -> Sandbox:
    return Sandbox(base_url=box.url(8091), headers={"Authorization": f"Bearer {API_KEY}"}, timeout=60)


def test_shell_exec_runs_a_command_as_the_sandbox_user(sandbox: Sandbox) -> None:
    answer = sandbox.shell.exec_command(command="echo hello; id -un; false")
    assert answer.success is True
    data = answer.data
    assert (data.status, data.output, data.exit_code) == ("completed", "hello\nsandbox\n", 1)
    again = sandbox.shell.exec_command(command="cd /tmp && pwd", id=data.session_id).data
    assert (again.output, again.exit_code) == ("/tmp\n", 0)


def test_shell_exec_async_reads_what_is_written_to_it(sandbox: Sandbox) -> None:
    started = sandbox.shell.exec_command(command="read -r name; echo got $name", async_mode=True).data
    assert started.status == "running"
    assert sandbox.shell.write_to_process(id=started.session_id, input="ada", press_enter=True).success is True
    view = until(lambda: (v := sandbox.shell.view(id=started.session_id).data).status == "completed" and v, 15)
    assert (view.output, view.exit_code) == ("got ada\n", 0)


def test_bash_exec_with_a_timeout_keeps_the_streams_apart(sandbox: Sandbox) -> None:
    data = sandbox.bash.exec(command="echo out; echo err >&2; exit 3", timeout=20).data
    assert (data.status, data.stdout, data.stderr, data.exit_code) == ("completed", "out\n", "err\n", 3)
    slow = sandbox.bash.exec(command="sleep 30", timeout=1).data
    assert slow.status == "running" and slow.exit_code is None
    assert sandbox.bash.kill(session_id=slow.session_id, signal="SIGKILL").data["signal"] == "SIGKILL"
    gone = until(lambda: (o := sandbox.bash.output(session_id=slow.session_id).data).command.status == "killed" and o)
    assert gone.command.exit_code == 137


def test_bash_async_exec_takes_input_from_bash_write(sandbox: Sandbox) -> None:
    started = sandbox.bash.exec(command="tr a-z A-Z", async_mode=True).data
    assert started.status == "running"
    written = sandbox.bash.write(session_id=started.session_id, input="hello\n\x04", command_id=started.command_id)
    assert written.success is True
    done = until(
        lambda: (
            (o := sandbox.bash.output(session_id=started.session_id, wait=True, wait_timeout=2).data).command
            and o.command.status == "completed"
            and o
        ),
        15,
    )
    assert (done.stdout, done.command.exit_code) == ("HELLO\n", 0)


def test_files_round_trip(sandbox: Sandbox, box: Box) -> None:
    directory = "/tmp/rest-sdk-files"
    target = f"{directory}/notes.txt"
    assert sandbox.file.write_file(file=target, content="3\n7\n12\n").success is True
    assert sandbox.file.read_file(file=target, start_line=1, end_line=2).data.content == "7\n"
    assert sandbox.file.replace_in_file(file=target, old_str="12", new_str="13").success is True
    assert sandbox.file.search_in_file(file=target, regex=r"^1\d$").data.line_numbers == [3]
    sandbox.file.upload_file(file=("blob.bin", bytes(range(256))), path=f"{directory}/blob.bin")
    assert b"".join(sandbox.file.download_file(path=f"{directory}/blob.bin")) == bytes(range(256))
    names = sorted(entry.name for entry in sandbox.file.list_path(path=directory).data.files)
    assert names == ["blob.bin", "notes.txt"]
    assert box.exec(f"stat -c %U {target}") == (0, "sandbox\n")


def test_code_python_javascript_and_jupyter_sessions(sandbox: Sandbox) -> None:
    python = sandbox.code.execute_code(language="python", code="import os\nprint(os.getuid(), 6 * 7)").data
    assert (python.status, python.stdout) == ("ok", "1000 42\n")
    node = sandbox.code.execute_code(language="javascript", code="console.log(process.getuid(), 6 * 7)").data
    assert (node.status, node.stdout) == ("ok", "1000 42\n")
    sandbox.jupyter.create_session(session_id="rest-sdk-nb")
    sandbox.jupyter.execute_code(code="x = 41", session_id="rest-sdk-nb")
    answer = sandbox.jupyter.execute_code(code="x + 1", session_id="rest-sdk-nb").data
    assert [output.data["text/plain"] for output in answer.outputs if output.output_type == "execute_result"] == ["42"]
    assert sandbox.jupyter.delete_session("rest-sdk-nb").success is True


def test_context_describes_the_image(sandbox: Sandbox) -> None:
    context = sandbox.sandbox.get_context()
    assert context.success is True and context.home_dir == "/home/sandbox"
    assert context.detail.system.user == "sandbox"
    packages = sandbox.sandbox.get_python_packages()
    assert packages.success is True and packages.data
