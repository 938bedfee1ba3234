"""A real gateway with sandboxd on, in a process of its own, driven by kubernetes-sigs/agent-sandbox's
SDK (``k8s-agent-sandbox``) as a cluster's client would, without a cluster: the SDK's in-cluster
connection to a pod IP, the pod being 127.0.0.1.

Why a process of its own: the SDK's generated messages and the gateway's are the same protobuf
package (``process.v1``), which one process cannot import twice. No test here imports
``agentbox_gateway.doors.sandboxd``'s messages or builds a gateway with sandboxd in-process."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from k8s_agent_sandbox.commands.command_executor import CommandExecutor
from k8s_agent_sandbox.connector import SandboxConnector
from k8s_agent_sandbox.files.filesystem import Filesystem
from k8s_agent_sandbox.models import SandboxdInClusterConnectionConfig

from tests.support.servers import console_script, free_port, run_command


@dataclass
class Sandboxd:
    root: Path
    rest: str
    grpc_target: str
    gateway: str
    connector: SandboxConnector

    @property
    def commands(self) -> CommandExecutor:
        return CommandExecutor(self.connector, None, "agentbox-tests")

    @property
    def files(self) -> Filesystem:
        return Filesystem(self.connector, None, "agentbox-tests")


@contextlib.contextmanager
def sandboxd_gateway(root: Path, **env: str) -> Iterator[Sandboxd]:
    """``aiod start`` with sandboxd on free loopback ports, rooted at ``root``."""
    grpc_port, rest_port, port = free_port(), free_port(), free_port()
    settings = {
        "SANDBOXD_ENABLED": "true",
        "SANDBOXD_ROOT_DIR": str(root),
        "SANDBOXD_GRPC_PORT": str(grpc_port),
        "SANDBOXD_REST_PORT": str(rest_port),
        "SANDBOX_ID": "agentbox-test",
        "SANDBOX_API_TOKEN": "never-shown",
        "AIO_SKILLS_PATH": str(root.parent / "skills"),
        **env,
    }
    args = [console_script("aiod"), "start", "--port", str(port)]
    with run_command(args, env=settings, ready_url=f"http://127.0.0.1:{rest_port}/v1/health"):
        config = SandboxdInClusterConnectionConfig(mode="in-cluster-pod-ip", rest_port=rest_port, grpc_port=grpc_port)
        connector = SandboxConnector("agentbox", "default", config, k8s_helper=None, get_pod_ip=lambda: "127.0.0.1")
        try:
            yield Sandboxd(
                root, f"http://127.0.0.1:{rest_port}", f"127.0.0.1:{grpc_port}", f"http://127.0.0.1:{port}", connector
            )
        finally:
            connector.close()


@pytest.fixture(scope="module")
def sandboxd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandboxd]:
    """One gateway for the module (no key), rooted at a fresh ``workspace`` folder."""
    root = tmp_path_factory.mktemp("sandboxd") / "workspace"
    with sandboxd_gateway(root) as served:
        yield served


@pytest.fixture
def workdir(sandboxd: Sandboxd, request: pytest.FixtureRequest) -> str:
    """A folder of this test's own under the root (its path relative to the root)."""
    name = request.node.name.replace("[", "-").replace("]", "")
    (sandboxd.root / name).mkdir(parents=True, exist_ok=True)
    return name


def user_name() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name
