"""sandboxd's ProcessService, through the official SDK: its ``commands.run`` (``Execute``) and its
generated stub for the RPCs its executor does not wrap (``Start``, ``WriteStdin``, ``SendSignal``,
``ResizeTTY``). The behaviours are those the reference server's tests check
(``packages/sandboxd/pkg/server/process_test.go``), plus agentbox's own: the same user, files and
limit as the rest of the sandbox, and a caller that goes away taking its process with it."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from k8s_agent_sandbox.commands._process_stubs import process_pb2 as pb
from k8s_agent_sandbox.commands._process_stubs import process_pb2_grpc

from tests.gateway.test_doctor import bin_with, checks, doctor
from tests.support.jsonrpc import call_tool, tool_text
from tests.support.metrics import has, scrape, value
from tests.support.polling import until

from .conftest import Sandboxd, sandboxd_gateway, user_name


@pytest.fixture(scope="module")
def stub(sandboxd: Sandboxd) -> Iterator[Any]:
    with grpc.insecure_channel(sandboxd.grpc_target) as channel:
        yield process_pb2_grpc.ProcessServiceStub(channel)


def start(stub: Any, command: list[str], **fields: Any) -> tuple[Iterator[Any], int]:
    """A ``Start`` stream and the process id its first event carries."""
    stream = stub.Start(pb.StartRequest(config=pb.ProcessConfig(command=command, **fields.pop("config", {})), **fields))
    first = next(stream)
    assert first.WhichOneof("event") == "init"
    return stream, first.init.process_id


def drain(stream: Iterator[Any]) -> tuple[bytes, bytes, int]:
    out, err = b"", b""
    for event in stream:
        kind = event.WhichOneof("event")
        if kind == "stdout":
            out += event.stdout
        elif kind == "stderr":
            err += event.stderr
        elif kind == "exit":
            return out, err, event.exit.exit_code
    raise AssertionError("the stream ended without an exit event")


def code_of(call: Any) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value.code()


def test_run_echo(sandboxd: Sandboxd) -> None:
    result = sandboxd.commands.run("echo hi")
    assert (result.stdout, result.stderr, result.exit_code) == ("hi\n", "", 0)


def test_run_keeps_stderr_and_the_exit_code_apart(sandboxd: Sandboxd) -> None:
    result = sandboxd.commands.run("echo out; echo err >&2; exit 3")
    assert (result.stdout, result.stderr, result.exit_code) == ("out\n", "err\n", 3)


def test_run_with_env_and_cwd(sandboxd: Sandboxd, workdir: str) -> None:
    result = sandboxd.commands.run('echo "$GREETING"; pwd', env={"GREETING": "hello"}, cwd=workdir)
    assert result.stdout.splitlines() == ["hello", str(sandboxd.root / workdir)]


def test_an_absolute_cwd_inside_the_root_is_that_folder(sandboxd: Sandboxd, workdir: str) -> None:
    assert sandboxd.commands.run("pwd", cwd=str(sandboxd.root / workdir)).stdout.strip() == str(sandboxd.root / workdir)


def test_the_default_cwd_is_the_root(sandboxd: Sandboxd) -> None:
    assert sandboxd.commands.run("pwd").stdout.strip() == str(sandboxd.root)


def test_a_cwd_outside_the_root_is_permission_denied(sandboxd: Sandboxd, stub: Any) -> None:
    with pytest.raises(RuntimeError, match="PERMISSION_DENIED"):
        sandboxd.commands.run("pwd", cwd="../..")
    request = pb.ExecuteRequest(config=pb.ProcessConfig(command=["pwd"], cwd="/../etc"))
    assert code_of(lambda: stub.Execute(request)) == grpc.StatusCode.PERMISSION_DENIED


def test_a_missing_program_is_not_found(stub: Any) -> None:
    request = pb.ExecuteRequest(config=pb.ProcessConfig(command=["/no/such/program"]))
    assert code_of(lambda: stub.Execute(request)) == grpc.StatusCode.NOT_FOUND


def test_a_missing_cwd_is_not_found(stub: Any) -> None:
    request = pb.ExecuteRequest(config=pb.ProcessConfig(command=["pwd"], cwd="no-such-folder"))
    assert code_of(lambda: stub.Execute(request)) == grpc.StatusCode.NOT_FOUND


def test_an_empty_command_is_invalid(stub: Any) -> None:
    assert code_of(lambda: stub.Execute(pb.ExecuteRequest())) == grpc.StatusCode.INVALID_ARGUMENT
    assert code_of(lambda: next(stub.Start(pb.StartRequest()))) == grpc.StatusCode.INVALID_ARGUMENT


def test_output_is_bytes_as_written(stub: Any) -> None:
    raw = bytes(range(256))
    request = pb.ExecuteRequest(config=pb.ProcessConfig(command=["printf", "".join(f"\\{b:03o}" for b in raw)]))
    answer = stub.Execute(request)
    assert (answer.stdout, answer.stderr, answer.exit_code) == (raw, b"", 0)


def test_start_streams_output_as_it_comes_then_the_exit(stub: Any) -> None:
    stream, _ = start(stub, ["sh", "-c", "echo one; sleep 0.5; echo two >&2; exit 4"])
    first = next(stream)
    began = time.monotonic()
    assert (first.WhichOneof("event"), first.stdout) == ("stdout", b"one\n")
    out, err, code = drain(stream)
    assert (out, err, code) == (b"", b"two\n", 4)
    assert time.monotonic() - began >= 0.3  # "one" came before the command ended


def test_write_stdin_then_eof(stub: Any) -> None:
    stream, pid = start(stub, ["cat"])
    stub.WriteStdin(pb.WriteStdinRequest(process_id=pid, input=b"hello "))
    stub.WriteStdin(pb.WriteStdinRequest(process_id=pid, input=b"world"))
    stub.WriteStdin(pb.WriteStdinRequest(process_id=pid, eof=pb.google_dot_protobuf_dot_empty__pb2.Empty()))
    assert drain(stream) == (b"hello world", b"", 0)


def test_input_after_eof_is_a_failed_precondition(stub: Any) -> None:
    stream, pid = start(stub, ["sh", "-c", "cat; sleep 30"])
    stub.WriteStdin(pb.WriteStdinRequest(process_id=pid, eof=pb.google_dot_protobuf_dot_empty__pb2.Empty()))
    request = pb.WriteStdinRequest(process_id=pid, input=b"late")
    assert code_of(lambda: stub.WriteStdin(request)) == grpc.StatusCode.FAILED_PRECONDITION
    stub.SendSignal(pb.SendSignalRequest(process_id=pid, signal=pb.SIGNAL_SIGKILL))
    drain(stream)


def test_unknown_process_ids_are_not_found(stub: Any) -> None:
    for call in (
        lambda: stub.WriteStdin(pb.WriteStdinRequest(process_id=987654, input=b"x")),
        lambda: stub.SendSignal(pb.SendSignalRequest(process_id=987654, signal=pb.SIGNAL_SIGTERM)),
        lambda: stub.ResizeTTY(pb.ResizeTTYRequest(process_id=987654, cols=10, rows=10)),
    ):
        assert code_of(call) == grpc.StatusCode.NOT_FOUND


def test_an_unspecified_signal_is_invalid(stub: Any) -> None:
    stream, pid = start(stub, ["sleep", "30"])
    request = pb.SendSignalRequest(process_id=pid, signal=pb.SIGNAL_UNSPECIFIED)
    assert code_of(lambda: stub.SendSignal(request)) == grpc.StatusCode.INVALID_ARGUMENT
    stub.SendSignal(pb.SendSignalRequest(process_id=pid, signal=pb.SIGNAL_SIGKILL))
    assert drain(stream)[2] == -1


def test_a_signal_reaches_the_whole_process_group(sandboxd: Sandboxd, stub: Any, workdir: str) -> None:
    marker = sandboxd.root / workdir / "child.pid"
    stream, pid = start(stub, ["sh", "-c", f"sleep 60 & echo $! > {marker}; wait"])
    until(lambda: marker.exists() and marker.read_text().strip(), 10)
    child = int(marker.read_text())
    stub.SendSignal(pb.SendSignalRequest(process_id=pid, signal=pb.SIGNAL_SIGTERM))
    assert drain(stream)[2] == -1
    until(lambda: not _alive(child), 10)
    assert code_of(lambda: stub.SendSignal(pb.SendSignalRequest(process_id=pid, signal=pb.SIGNAL_SIGTERM))) == (
        grpc.StatusCode.NOT_FOUND
    )


def test_resize_without_a_terminal_is_a_failed_precondition(stub: Any) -> None:
    stream, pid = start(stub, ["sleep", "30"])
    request = pb.ResizeTTYRequest(process_id=pid, cols=100, rows=40)
    assert code_of(lambda: stub.ResizeTTY(request)) == grpc.StatusCode.FAILED_PRECONDITION
    stub.SendSignal(pb.SendSignalRequest(process_id=pid, signal=pb.SIGNAL_SIGKILL))
    drain(stream)


def test_start_with_a_terminal(stub: Any) -> None:
    stream, _ = start(stub, ["sh", "-c", "stty size && tty"], pty=pb.PTY(cols=80, rows=24))
    out, _, code = drain(stream)
    lines = out.decode().split()
    assert code == 0 and lines[:2] == ["24", "80"] and lines[2].startswith("/dev/pts/")


def test_resize_a_terminal(stub: Any) -> None:
    stream, pid = start(stub, ["sh", "-c", "read line; stty size"], pty=pb.PTY(cols=80, rows=24))
    stub.ResizeTTY(pb.ResizeTTYRequest(process_id=pid, cols=132, rows=50))
    stub.WriteStdin(pb.WriteStdinRequest(process_id=pid, input=b"go\n"))
    out, _, code = drain(stream)
    assert code == 0 and "50 132" in out.decode()


def test_a_cancelled_stream_kills_its_process(sandboxd: Sandboxd, stub: Any, workdir: str) -> None:
    marker = sandboxd.root / workdir / "pid"
    stream, _ = start(stub, ["sh", "-c", f"echo $$ > {marker}; exec sleep 60"])
    until(lambda: marker.exists() and marker.read_text().strip(), 10)
    stream.cancel()
    until(lambda: not _alive(int(marker.read_text())), 10)


def test_a_run_past_its_command_timeout_is_reported_and_killed(sandboxd: Sandboxd, workdir: str) -> None:
    marker = sandboxd.root / workdir / "pid"
    result = sandboxd.commands.run(f"echo $$ > {marker}; exec sleep 60", command_timeout=1)
    assert (result.exit_code, result.timed_out) == (124, True)
    until(lambda: not _alive(int(marker.read_text())), 10)


def test_commands_run_as_the_sandbox_user_and_see_what_mcp_wrote(sandboxd: Sandboxd, workdir: str) -> None:
    path = sandboxd.root / workdir / "from-mcp.txt"
    call_tool(f"{sandboxd.gateway}/mcp", "sandbox_execute_bash", {"cmd": f"echo written by mcp > {path}"})
    result = sandboxd.commands.run(f"cat {path}; id -un")
    assert result.stdout.splitlines() == ["written by mcp", user_name()]
    answer = call_tool(f"{sandboxd.gateway}/mcp", "sandbox_execute_bash", {"cmd": f"cat {path}"})
    assert "written by mcp" in tool_text(answer)


def test_the_sandboxes_secrets_are_not_in_a_commands_environment(sandboxd: Sandboxd) -> None:
    assert "AIO_API_KEY" not in sandboxd.commands.run("env").stdout


def test_concurrent_runs_are_served_together(sandboxd: Sandboxd) -> None:
    results: list[Any] = []
    began = time.monotonic()
    threads = [
        threading.Thread(target=lambda: results.append(sandboxd.commands.run("sleep 1; echo done"))) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert [r.stdout for r in results] == ["done\n"] * 4
    assert time.monotonic() - began < 3.5


def test_metrics_count_the_calls(sandboxd: Sandboxd, stub: Any) -> None:
    def count(method: str, code: str = "OK") -> float:
        return value(scrape(sandboxd.gateway), "agentbox_sandboxd_calls_total", api="grpc", method=method, code=code)

    started, executed = count("Start"), count("Execute")
    sandboxd.commands.run("true")
    drain(start(stub, ["true"])[0])
    assert (count("Start"), count("Execute")) == (started + 1, executed + 1)
    assert has(scrape(sandboxd.gateway), "agentbox_sandboxd_processes")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_doctor_checks_both_listeners(sandboxd: Sandboxd, tmp_path: Path) -> None:
    grpc_port = sandboxd.grpc_target.rpartition(":")[2]
    rest_port = sandboxd.rest.rpartition(":")[2]
    env = {"SANDBOXD_GRPC_PORT": grpc_port, "SANDBOXD_REST_PORT": rest_port, "SANDBOXD_ROOT_DIR": str(sandboxd.root)}
    path = bin_with(tmp_path, "bash", "python3")
    found = checks(doctor(path, tmp_path, "--json", SANDBOXD_ENABLED="true", **env))
    assert all(found[name]["ok"] for name in ("sandboxd rest", "sandboxd grpc", "sandboxd root")), found
    off = checks(
        doctor(path, tmp_path, "--json", SANDBOXD_ENABLED="true", SANDBOXD_GRPC_PORT="9", SANDBOXD_REST_PORT="9")
    )
    assert not off["sandboxd rest"]["ok"] and not off["sandboxd grpc"]["ok"]
    assert checks(doctor(path, tmp_path, "--json"))["sandboxd"]["ok"]


def test_stopping_the_gateway_stops_its_processes(tmp_path: Path) -> None:
    """The gateway stopped while a ``Start`` stream is open (its client still connected): the process
    and what it started in the background are gone."""
    root = tmp_path / "workspace"
    with contextlib.ExitStack() as stack:
        with sandboxd_gateway(root) as served:
            channel = stack.enter_context(grpc.insecure_channel(served.grpc_target))
            stub = process_pb2_grpc.ProcessServiceStub(channel)
            _stream = start(stub, ["sh", "-c", f"sleep 60 & echo $! > {root}/child; exec sleep 60"])  # kept open
            until(lambda: (root / "child").exists() and (root / "child").read_text().strip(), 10)
            child = int((root / "child").read_text())
            assert _alive(child)
        until(lambda: not _alive(child), 15)
