"""supervisord inside the image: a program killed with SIGKILL comes back, and the others keep
answering while it is down."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import docker
import httpx
import pytest

from .dockerbox import Box, running_box

pytestmark = pytest.mark.docker


def answers(box: Box) -> dict[str, Callable[[], bool]]:
    """One cheap readiness probe per program, each through the port the program serves."""

    def http_ok(port: int, path: str) -> Callable[[], bool]:
        def probe() -> bool:
            try:
                return httpx.get(box.url(port, path), timeout=3).status_code == 200
            except httpx.HTTPError:
                return False

        return probe

    def browser_ok() -> bool:
        code, _ = box.exec("curl -fsS --max-time 3 -o /dev/null http://127.0.0.1:8100/health", user="sandbox")
        return code == 0

    return {
        "gateway": http_ok(8091, "/health"),
        "browser": browser_ok,
        "mcp-mode": http_ok(8081, "/healthz"),
        "agent-api": http_ok(8080, "/healthz"),
    }


def wait_until(probe: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return True
        time.sleep(0.2)
    return False


@pytest.fixture(scope="module")
def all_programs(docker_client: docker.DockerClient, agentbox_image: str) -> Iterator[Box]:
    """All four programs at once: API mode on (agent-api), plus the standalone mcp-mode started by hand."""
    env = {"AICODEBOX_API_MODE": "1", "AICODEBOX_MCP_MODE": "1", "AICODEBOX_AVAILABLE_MODELS": "model-a"}
    with running_box(docker_client, agentbox_image, env) as box:
        code, output = box.exec("supervisorctl start mcp-mode")
        assert code == 0, output
        probes = answers(box)
        for name, probe in probes.items():
            assert wait_until(probe, 90), f"{name} never answered\n{box.logs()}"
        yield box


@pytest.mark.parametrize("program", ["gateway", "browser", "mcp-mode", "agent-api"])
def test_a_killed_program_comes_back_while_the_others_serve(all_programs: Box, program: str) -> None:
    box = all_programs
    probes = answers(box)
    old_pid = box.program_pid(program)
    code, output = box.exec(f"kill -KILL {old_pid}")
    assert code == 0, output

    for name, probe in probes.items():
        if name != program:
            assert probe(), f"{name} stopped answering while {program} was down"

    deadline = time.monotonic() + 60
    new_pid = old_pid
    while time.monotonic() < deadline:
        states = box.program_states()
        if states.get(program) == "RUNNING":
            new_pid = box.program_pid(program)
            if new_pid != old_pid:
                break
        time.sleep(0.2)
    assert new_pid != old_pid, f"{program} was not restarted: {box.program_states()}\n{box.logs()}"
    assert wait_until(probes[program], 60), f"{program} restarted but does not answer\n{box.logs()}"
    for name, probe in probes.items():
        assert probe(), f"{name} is not answering after {program} came back"


def test_chromium_goes_with_a_killed_browser_program(all_programs: Box) -> None:
    box = all_programs
    assert wait_until(answers(box)["browser"], 60)
    _, before = box.exec("pgrep -d, -f -- '--remote-debugging-port=9222' || true")
    assert before.strip(), "no Chromium is running"
    box.exec(f"kill -KILL {box.program_pid('browser')}")
    assert wait_until(answers(box)["browser"], 60), box.logs()
    _, after = box.exec("pgrep -d, -f -- '--remote-debugging-port=9222' || true")
    assert after.strip() and not set(before.strip().split(",")) & set(after.strip().split(","))

    def no_zombies() -> bool:
        return box.exec("ps -eo stat= | grep -c '^Z' || true")[1].strip() == "0"

    assert wait_until(no_zombies, 15), box.exec("ps -eo stat,pid,ppid,comm")[1]
