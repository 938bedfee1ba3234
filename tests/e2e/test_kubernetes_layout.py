"""The image runs the way deploy/kubernetes/ runs it: each SandboxTemplate's pod (with the browser, and
code-only with DISABLE_BROWSER=true) started by docker-py with the arguments read from the manifest (see
pod_to_docker.py): uid 1000 on a read-only root with only the workspace volume and the emptyDirs writable,
no capabilities, no privilege escalation, the memory and CPU limits, the keys init container run first
with the Secret, and the probes. Each pod answers only its own keys (derived from the pool secret and its
name, as deploy/kubernetes/sandbox-keys prints them), and the sandbox user finds no key in any process
environment or file. The readiness probe (agentbox-ready) passes, the liveness probe makes the container healthy,
/mcp answers on the gateway and in MCP mode (also by the pod's headless Service name), and every program stays up."""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import shlex
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType

import docker
import pytest

from tests.support.jsonrpc import call_tool, tool_json
from tests.support.kubernetes_manifests import DEPLOY, TEMPLATES, template

from .dockerbox import LABEL, Box, mcp_payload, mcp_post, unique
from .pod_to_docker import PodLayout, SharedVolume, pod_layout
from .test_image_mcp_mode import MCP_MODE_TOOLS

pytestmark = pytest.mark.docker

POOL_SECRET = "k8s-pool-secret-51c0e9a7d3b24f6c8a1e0d9b7c5a3f21"
SECRETS = {"AGENTBOX_POOL_SECRET": POOL_SECRET}
NAMESPACE = "agents"
POD_IP = "10.244.3.17"
HEALTHY_TIMEOUT = 60.0
BROWSER_TIMEOUT = 30.0


def _sandbox_keys() -> ModuleType:
    """deploy/kubernetes/sandbox-keys (a script without a .py name) as a module."""
    loader = importlib.machinery.SourceFileLoader("sandbox_keys", str(DEPLOY / "sandbox-keys"))
    spec = importlib.util.spec_from_loader("sandbox_keys", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def keys_of(pod_name: str) -> dict[str, str]:
    """The keys the claimant of ``pod_name`` gets from sandbox-keys."""
    return _sandbox_keys().keys(POOL_SECRET.encode(), pod_name)


@dataclass
class Pod:
    name: str
    template: str
    layout: PodLayout
    box: Box

    @property
    def keys(self) -> dict[str, str]:
        return keys_of(self.name)

    @property
    def gateway_auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys['AIO_API_KEY']}"}

    @property
    def mcp_auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys['AICODEBOX_MCP_MODE_TOKEN']}"}

    @property
    def browser(self) -> bool:
        return self.layout.run_args["environment"].get("DISABLE_BROWSER") != "true"

    def gateway(self) -> str:
        return self.box.url(self.layout.ports["gateway"], "/mcp")

    def bash(self, cmd: str) -> dict:
        result = call_tool(self.gateway(), "sandbox_execute_bash", {"cmd": cmd}, headers=self.gateway_auth)
        return tool_json(result)


def make_volume(client: docker.DockerClient, image: str, volume: SharedVolume) -> None:
    """The volume, its root owned as the kubelet makes it, the Secret's files written as it writes them."""
    client.volumes.create(volume.docker_name, labels={LABEL: "1"})
    group = volume.owner.split(":")[1]
    script = f"chown {volume.owner} /v && chmod {volume.mode:o} /v; " + "".join(
        f"printf %s {shlex.quote(content)} > /v/{path} && chown 0:{group} /v/{path} && chmod {mode:o} /v/{path}; "
        for path, (content, mode) in volume.files.items()
    )
    client.containers.run(
        image, entrypoint=["sh", "-c", script], user="0", volumes={volume.docker_name: {"bind": "/v"}}, remove=True
    )


def run_init(client: docker.DockerClient, image: str, run_args: dict) -> None:
    """One init container, to completion; its failure fails the pod (as it keeps a pod from starting)."""
    init = client.containers.run(image, **run_args)
    try:
        status = init.wait(timeout=60)
        assert status["StatusCode"] == 0, init.logs().decode(errors="replace")
    finally:
        init.remove(force=True)


def wait_ready(box: Box, layout: PodLayout, timeout: float = 90.0) -> None:
    """Run the readiness probe's command as the kubelet does (as the pod's user) until it passes."""
    deadline = time.monotonic() + timeout
    code, output = box.exec(shlex.join(layout.readiness), user=layout.run_args["user"])
    while code != 0 and time.monotonic() < deadline:
        time.sleep(0.5)
        code, output = box.exec(shlex.join(layout.readiness), user=layout.run_args["user"])
    assert code == 0, f"the readiness probe never passed: {output}\n{box.logs()}"


@pytest.fixture(scope="module", params=TEMPLATES)
def pod(request: pytest.FixtureRequest, docker_client: docker.DockerClient, agentbox_image: str) -> Iterator[Pod]:
    """The template's pod as a container, ready the way its readiness probe says."""
    name = unique(request.param)
    workspace = docker_client.volumes.create(f"workspace-{name}", labels={LABEL: "1"})
    layout = pod_layout(
        template(request.param),
        name=name,
        namespace=NAMESPACE,
        pod_ip=POD_IP,
        secrets=SECRETS,
        claim_volumes={"workspace": workspace.name},
        labels={LABEL: "1"},
    )
    box = None
    try:
        for volume in layout.shared_volumes:
            make_volume(docker_client, agentbox_image, volume)
        for init_args in layout.init_args:
            run_init(docker_client, agentbox_image, init_args)
        box = Box(docker_client.containers.run(agentbox_image, **layout.run_args), tuple(layout.ports.values()))
        box.refresh_ports()
        wait_ready(box, layout)
        yield Pod(name, request.param, layout, box)
    finally:
        if box is not None:
            box.remove()
        workspace.remove(force=True)
        for volume in layout.shared_volumes:
            with contextlib.suppress(docker.errors.NotFound):
                docker_client.volumes.get(volume.docker_name).remove(force=True)


def test_the_liveness_probe_makes_the_container_healthy(pod: Pod) -> None:
    deadline = time.monotonic() + HEALTHY_TIMEOUT
    status = "none"
    while time.monotonic() < deadline:
        pod.box.container.reload()
        status = pod.box.container.attrs["State"]["Health"]["Status"]
        if status == "healthy":
            break
        time.sleep(1)
    assert status == "healthy", pod.box.logs()


def test_the_container_has_the_templates_constraints(pod: Pod) -> None:
    pod.box.container.reload()
    host = pod.box.container.attrs["HostConfig"]
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"] and host["SecurityOpt"] == ["no-new-privileges"]
    assert host["Memory"] == pod.layout.run_args["mem_limit"] and host["NanoCpus"] > 0
    assert pod.box.container.attrs["Config"]["User"] == "1000:1000"


def test_sandbox_commands_write_only_where_the_template_mounts(pod: Pod) -> None:
    done = pod.bash(
        "id -u; id -G; touch /etc/probe /opt/probe 2>&1; "
        "echo w > /workspace/w && echo t > /tmp/t && echo h > ~/h && cat /workspace/w /tmp/t ~/h; "
        "test -f ~/.profile && test -d ~/skills && echo seeded"
    )
    lines = done["output"].split("\n")
    assert lines[0] == "1000" and "1000" in lines[1].split()
    assert lines[2:4] == [
        "touch: cannot touch '/etc/probe': Read-only file system",
        "touch: cannot touch '/opt/probe': Read-only file system",
    ]
    assert lines[4:8] == ["w", "t", "h", "seeded"], done


def test_the_sandbox_user_finds_no_key(pod: Pod) -> None:
    """Neither the pod's keys, nor the pool secret they come from, in any environment a process of the sandbox
    user can read (PID 1's included) or in any file it can read where keys are kept."""
    secrets = [POOL_SECRET, *pod.keys.values()]
    code, output = pod.box.exec(
        "id -u; for e in /proc/[0-9]*/environ; do tr '\\0' '\\n' 2>/dev/null < $e; done; "
        "cat /run/agentbox-keys/* /run/agentbox-pool/* 2>&1; true",
        user="1000",
    )
    assert code == 0 and output.split("\n")[0] == "1000", output
    assert "AIO_API_KEY=" not in output and "AICODEBOX_MCP_MODE_TOKEN=" not in output
    assert [secret for secret in secrets if secret in output] == []
    assert "AIO_API_KEY_FILE=/run/agentbox-keys/gateway" in output  # PID 1's environment was read
    assert "sha256:" in output  # and the digests: a digest is not a key


def test_each_pod_answers_only_its_own_key(pod: Pod) -> None:
    other = keys_of(f"{pod.name}-other")
    assert other["AIO_API_KEY"] != pod.keys["AIO_API_KEY"]
    wrong = mcp_post(pod.gateway(), "tools/list", headers={"Authorization": f"Bearer {other['AIO_API_KEY']}"})
    assert wrong.status_code == 401
    assert mcp_post(pod.gateway(), "tools/list", headers=pod.gateway_auth).status_code == 200
    mcp = pod.box.url(pod.layout.ports["mcp-mode"], "/mcp")
    foreign = {"Authorization": f"Bearer {other['AICODEBOX_MCP_MODE_TOKEN']}"}
    assert mcp_post(mcp, "tools/list", headers=foreign).status_code == 401
    assert mcp_post(mcp, "tools/list", headers=pod.mcp_auth).status_code == 200


def test_gateway_mcp_answers_behind_the_secrets_key(pod: Pod) -> None:
    assert mcp_post(pod.gateway(), "tools/list").status_code == 401
    names = [
        tool["name"]
        for tool in mcp_payload(mcp_post(pod.gateway(), "tools/list", headers=pod.gateway_auth))["result"]["tools"]
    ]
    assert names[0] == "sandbox_execute_bash"
    assert ("browser_navigate" in names) is pod.browser
    for language, code, printed in (("python", "print(6 * 7)", "42"), ("javascript", "console.log(6 * 7)", "42")):
        result = call_tool(
            pod.gateway(), "sandbox_execute_code", {"code": code, "language": language}, headers=pod.gateway_auth
        )
        assert result["isError"] is False and printed in str(result["content"]), result


def test_the_browser_runs_on_the_read_only_root(pod: Pod) -> None:
    page = {"url": "data:text/html,<h1>agentbox on k8s</h1>"}
    if not pod.browser:  # the code-only template offers no page tools at all
        call = {"name": "browser_navigate", "arguments": page}
        answer = mcp_payload(mcp_post(pod.gateway(), "tools/call", call, headers=pod.gateway_auth))
        assert answer["error"]["code"] == -32602, answer
        return
    # Ready means the page tools are listed; Chromium itself may still be starting for the first call.
    deadline = time.monotonic() + BROWSER_TIMEOUT
    navigated = call_tool(pod.gateway(), "browser_navigate", page, headers=pod.gateway_auth)
    while navigated["isError"] and time.monotonic() < deadline:
        time.sleep(0.5)
        navigated = call_tool(pod.gateway(), "browser_navigate", page, headers=pod.gateway_auth)
    assert navigated["isError"] is False, navigated
    shot = call_tool(pod.gateway(), "browser_gui_screenshot", {}, headers=pod.gateway_auth)
    assert shot["isError"] is False and shot["content"][0]["type"] == "image"


def test_mcp_mode_answers_by_loopback_its_headless_service_name_and_pod_ip(pod: Pod) -> None:
    url = pod.box.url(pod.layout.ports["mcp-mode"], "/mcp")
    assert mcp_post(url, "tools/list").status_code == 401
    service = f"{pod.name}.{NAMESPACE}.svc.cluster.local:{pod.layout.ports['mcp-mode']}"
    port = pod.layout.ports["mcp-mode"]
    for host in (None, service, f"{pod.name}:{port}", f"{POD_IP}:{port}"):
        headers = {**pod.mcp_auth, **({"Host": host} if host else {})}
        tools = mcp_payload(mcp_post(url, "tools/list", headers=headers))["result"]["tools"]
        assert {tool["name"] for tool in tools} == MCP_MODE_TOOLS, host
    foreign = mcp_post(url, "tools/list", headers={**pod.mcp_auth, "Host": "agent.example.test:8081"})
    assert foreign.status_code == 421


def test_every_program_stays_up_and_none_hits_the_read_only_root(pod: Pod) -> None:
    expected = {
        "gateway": "RUNNING",
        "mcp-mode": "RUNNING",
        "agent-api": "STOPPED",
        "telegram": "STOPPED",
        "cron": "STOPPED",
        "browser": "RUNNING" if pod.browser else "STOPPED",
        # the live view's display stack runs where there is a browser to show
        "display": "RUNNING" if pod.browser else "STOPPED",
        "vnc": "RUNNING" if pod.browser else "STOPPED",
        # and the desktop's session D-Bus and accessibility bus (/v2/computer) with it
        "session-bus": "RUNNING" if pod.browser else "STOPPED",
        "accessibility-bus": "RUNNING" if pod.browser else "STOPPED",
    }
    _, output = pod.box.exec("supervisorctl status", user="")
    states = {line.split()[0]: line.split()[1] for line in output.splitlines() if len(line.split()) > 1}
    assert states == expected, output
    assert "Read-only file system" not in pod.box.logs(tail=2000)
