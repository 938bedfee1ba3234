"""sandboxd in the image (issue 31): a container with ``SANDBOXD_ENABLED`` driven by the official
``k8s-agent-sandbox`` SDK through its ports published on 127.0.0.1, as a cluster client reaches a
pod: commands (``Execute``), a streamed long command, stdin and a signal (the SDK's generated
stub), files written, read, listed and deleted, a traversal refused, the commands running as the
image's sandbox user in ``/workspace``; then a bounded schemathesis pass over the REST API
(``tests/support/sandboxd_openapi.py``), and a keyed container refusing the SDK without the key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import grpc
import httpx
import pytest
from k8s_agent_sandbox.commands._process_stubs import process_pb2 as pb
from k8s_agent_sandbox.commands._process_stubs import process_pb2_grpc
from k8s_agent_sandbox.commands.command_executor import CommandExecutor
from k8s_agent_sandbox.connector import SandboxConnector
from k8s_agent_sandbox.files.filesystem import Filesystem
from k8s_agent_sandbox.models import SandboxdInClusterConnectionConfig

from tests.support.sandboxd_openapi import SCHEMA

from .dockerbox import Box, running_box

pytestmark = pytest.mark.docker

SANDBOXD = {"SANDBOXD_ENABLED": "true", "SANDBOXD_LISTEN_HOST": "0.0.0.0", "SANDBOX_ID": "e2e-box"}
PORTS = (8091, 8092, 9090)
FUZZ_SECONDS = int(os.environ.get("AGENTBOX_SANDBOXD_FUZZ_SECONDS", "40"))


def connector(box: Box) -> SandboxConnector:
    config = SandboxdInClusterConnectionConfig(
        mode="in-cluster-pod-ip", rest_port=box.ports[8092], grpc_port=box.ports[9090]
    )
    return SandboxConnector("e2e", "default", config, k8s_helper=None, get_pod_ip=lambda: "127.0.0.1")


@pytest.fixture(scope="module")
def sandboxd_box(docker_client: docker.DockerClient, agentbox_image: str) -> Iterator[Box]:
    with running_box(docker_client, agentbox_image, {**SANDBOXD, "DISABLE_BROWSER": "true"}, published=PORTS) as box:
        box.wait_http(8092, "/v1/health")
        yield box


@pytest.fixture(scope="module")
def sdk(sandboxd_box: Box) -> Iterator[tuple[CommandExecutor, Filesystem]]:
    connection = connector(sandboxd_box)
    yield CommandExecutor(connection, None, "e2e"), Filesystem(connection, None, "e2e")
    connection.close()


def test_commands_run_as_the_sandbox_user_in_the_workspace(sdk: tuple[CommandExecutor, Filesystem]) -> None:
    commands, _ = sdk
    result = commands.run("echo hi; id -un; pwd")
    assert (result.stdout.splitlines(), result.exit_code) == (["hi", "sandbox", "/workspace"], 0)


def test_files_through_the_sdk(sdk: tuple[CommandExecutor, Filesystem], sandboxd_box: Box) -> None:
    commands, files = sdk
    files.write("e2e/notes/hello.txt", b"hello from the sdk")
    assert files.read("e2e/notes/hello.txt") == b"hello from the sdk"
    assert [entry.name for entry in files.list("e2e/notes")] == ["hello.txt"]
    assert commands.run("cat /workspace/e2e/notes/hello.txt").stdout == "hello from the sdk"
    status, owner = sandboxd_box.exec("stat -c %U /workspace/e2e/notes/hello.txt")
    assert (status, owner.strip()) == (0, "sandbox")
    files.delete("e2e", recursive=True)
    assert not files.exists("e2e/notes/hello.txt")
    refused = httpx.get(sandboxd_box.url(8092, "/v1/files/..%2F..%2Fetc%2Fpasswd"))
    assert (refused.status_code, refused.json()["code"]) == (403, "PERMISSION_DENIED")


def test_a_streamed_command_with_stdin_and_a_signal(sandboxd_box: Box) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{sandboxd_box.ports[9090]}") as channel:
        stub = process_pb2_grpc.ProcessServiceStub(channel)
        stream = stub.Start(
            pb.StartRequest(config=pb.ProcessConfig(command=["sh", "-c", "while read line; do echo got $line; done"]))
        )
        process_id = next(stream).init.process_id
        stub.WriteStdin(pb.WriteStdinRequest(process_id=process_id, input=b"one\n"))
        assert next(stream).stdout == b"got one\n"
        stub.SendSignal(pb.SendSignalRequest(process_id=process_id, signal=pb.SIGNAL_SIGTERM))
        assert [event.exit.exit_code for event in stream if event.WhichOneof("event") == "exit"] == [-1]


def test_the_rest_api_passes_a_bounded_schemathesis_run(sandboxd_box: Box, tmp_path: Path) -> None:
    schema = tmp_path / "sandboxd.json"
    schema.write_text(json.dumps(SCHEMA))
    report = tmp_path / "report.json"
    config = tmp_path / "schemathesis.toml"
    config.write_text(
        "cache.enabled = false\ngeneration.max-examples = 20\n[checks]\nenabled = false\n"
        + "".join(
            f"{check}.enabled = true\n"
            for check in (
                "not_a_server_error",
                "status_code_conformance",
                "content_type_conformance",
                "response_schema_conformance",
                "negative_data_rejection",
                "unsupported_method",
                "allow_header_conformance",
            )
        )
    )
    command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run", str(schema)]
    command += ["--url", sandboxd_box.url(8092, "/v1"), "--max-time", str(FUZZ_SECONDS), "--seed", "20261206"]
    command += ["--no-color", "--report", "json", "--report-json-path", str(report)]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=FUZZ_SECONDS + 120, cwd=tmp_path)
    output = finished.stdout[-8000:] + finished.stderr[-2000:]
    assert report.exists(), output
    found: dict[str, Any] = json.loads(report.read_text())
    assert not found["failures"] and not found["errors"], output
    assert finished.returncode == 0, output
    assert found["test_cases"]["generated"] >= 500, output
    assert httpx.get(sandboxd_box.url(8092, "/v1/health")).status_code == 200


def test_a_keyed_box_refuses_the_sdk_without_the_key(docker_client: docker.DockerClient, agentbox_image: str) -> None:
    env = {**SANDBOXD, "DISABLE_BROWSER": "true", "AIO_API_KEY": "e2e-sandboxd-key"}
    with running_box(docker_client, agentbox_image, env, published=PORTS) as box:
        box.wait_http(8092, "/v1/health")
        connection = connector(box)
        try:
            with pytest.raises(RuntimeError, match="UNAUTHENTICATED"):
                CommandExecutor(connection, None, "e2e").run("true")
        finally:
            connection.close()
        headers = {"Authorization": "Bearer e2e-sandboxd-key"}
        assert httpx.put(box.url(8092, "/v1/files/k.txt"), content=b"k").status_code == 401
        assert httpx.put(box.url(8092, "/v1/files/k.txt"), content=b"k", headers=headers).status_code == 204
