"""aicodebox's foreground modes in the image: cron and Telegram (with cron inside) started by their
flags as supervisord programs, MCP mode answering on 8081 beside each, and passthrough handing the
container's arguments to the agent CLI. A stand-in agent CLI, a job file and a fake Bot API (itself a
supervisord program) are copied into the container before it starts."""

from __future__ import annotations

import contextlib
import io
import json
import tarfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import docker
import httpx
import pytest
import yaml

from tests.mcp_mode.helpers import HERE as MCP_TESTS
from tests.support import fake_bot_api

from .dockerbox import AGENTBOX_PORTS, LABEL, Box, mcp_payload, mcp_post, unique

pytestmark = pytest.mark.docker

TOKEN = "4242:e2e-telegram-token"
BOT_API_PORT = 18999
CHAT = 111
AGENT = "/opt/e2e/fake-agent"
PASSTHROUGH_AGENT = """#!/bin/sh
echo "args:$*"
echo "user:$(id -un) cwd:$(pwd) key:${AIO_API_KEY:-none}"
if [ "$1" = "--wait" ]; then sleep 120; fi
"""
FAKE_BOT_PROGRAM = f"""[program:fake-bot-api]
command=/opt/agentbox/bin/python /opt/e2e/fake_bot_api.py {BOT_API_PORT} {TOKEN}
user=sandbox
priority=5
autorestart=true
stdout_logfile=/dev/stdout
stdout_logfile_maxbytes=0
stderr_logfile=/dev/stderr
stderr_logfile_maxbytes=0
"""


def archive(files: Mapping[str, tuple[bytes, int]]) -> bytes:
    """A tar of ``/opt/e2e`` (owned by the sandbox user, so the stand-in can log there) and ``files``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        directory = tarfile.TarInfo("opt/e2e")
        directory.type, directory.mode, directory.uid, directory.gid = tarfile.DIRTYPE, 0o755, 1000, 1000
        tar.addfile(directory)
        for path, (content, mode) in files.items():
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode, info.uid, info.gid = len(content), mode, 1000, 1000
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def e2e_files(**extra: tuple[bytes, int]) -> dict[str, tuple[bytes, int]]:
    stand_in = "#!/usr/bin/python3\n" + (MCP_TESTS / "fake_agent.py").read_text()
    return {
        AGENT: (stand_in.encode(), 0o755),
        "/opt/e2e/passthrough-agent": (PASSTHROUGH_AGENT.encode(), 0o755),
        **extra,
    }


@contextlib.contextmanager
def prepared_box(
    client: docker.DockerClient,
    image: str,
    env: Mapping[str, str],
    files: Mapping[str, tuple[bytes, int]],
    command: list[str] | None = None,
    published: tuple[int, ...] = AGENTBOX_PORTS,
) -> Iterator[Box]:
    """Create the container, copy ``files`` in, then start it (ports on random 127.0.0.1 ports)."""
    container = client.containers.create(
        image,
        command=command,
        name=unique("agentbox-e2e"),
        environment=dict(env),
        shm_size="1g",
        ports={f"{port}/tcp": ("127.0.0.1", None) for port in published},
        labels={LABEL: "1"},
    )
    box = Box(container, published)
    try:
        container.put_archive("/", archive(files))
        container.start()
        if published:
            box.refresh_ports()
        yield box
    finally:
        box.remove()


def wait_for(check: Any, what: str, box: Box, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.3)
    raise AssertionError(f"{what} did not happen within {timeout}s\n{box.logs()}")


def mcp_answers_beside(box: Box) -> None:
    box.wait_http(8081, "/healthz")
    tools = mcp_payload(mcp_post(box.url(8081, "/mcp"), "tools/list"))["result"]["tools"]
    assert "run_prompt" in {tool["name"] for tool in tools}


def test_cron_mode_by_its_flag_with_mcp_mode_beside(docker_client: docker.DockerClient, agentbox_image: str) -> None:
    jobs = {"jobs": [{"name": "tick", "schedule": "*/2 * * * * *", "instruction": "ANSWER from cron"}]}
    env = {
        "AICODEBOX_CRON_MODE": "1",
        "AICODEBOX_CRON_MODE_FILE": "/opt/e2e/cron.yml",
        "AICODEBOX_MCP_MODE": "1",
        "AICODEBOX_AGENT_BINARY": AGENT,
        "DISABLE_BROWSER": "true",
    }
    files = e2e_files(**{"/opt/e2e/cron.yml": (yaml.safe_dump(jobs).encode(), 0o644)})
    with prepared_box(docker_client, agentbox_image, env, files) as box:
        states = box.wait_state("cron", "RUNNING")
        assert states["telegram"] == "STOPPED" and states["agent-api"] == "STOPPED"
        mcp_answers_beside(box)
        assert box.wait_state("mcp-mode", "RUNNING")

        def history() -> list[dict[str, Any]]:
            code, output = box.exec("cat /home/sandbox/.aicodebox/cron/history/workspace/tick.jsonl")
            return [json.loads(line) for line in output.splitlines() if line.startswith("{")] if code == 0 else []

        runs = wait_for(lambda: len(history()) >= 2 and history(), "two cron runs", box)
        assert runs[0]["result"] == "from cron" and runs[0]["workspace"] == "/workspace"


def test_telegram_mode_with_cron_inside_and_mcp_mode_beside(
    docker_client: docker.DockerClient, agentbox_image: str
) -> None:
    jobs = {
        "telegram_chat_id": CHAT,
        "jobs": [{"name": "ping", "schedule": "*/3 * * * * *", "workspace": "jobs", "instruction": "ANSWER pong"}],
    }
    env = {
        "AICODEBOX_TELEGRAM_MODE": "1",
        "AICODEBOX_CRON_MODE": "1",
        "AICODEBOX_MCP_MODE": "1",
        "AICODEBOX_TELEGRAM_MODE_TOKEN": TOKEN,
        "AICODEBOX_TELEGRAM_MODE_API_URL": f"http://127.0.0.1:{BOT_API_PORT}",
        "TELEGRAM_CHAT_ID": str(CHAT),
        "AICODEBOX_CRON_MODE_FILE": "/opt/e2e/cron.yml",
        "AICODEBOX_AGENT_BINARY": AGENT,
        "DISABLE_BROWSER": "true",
    }
    files = e2e_files(
        **{
            "/opt/e2e/cron.yml": (yaml.safe_dump(jobs).encode(), 0o644),
            "/opt/e2e/fake_bot_api.py": (Path(fake_bot_api.__file__).read_bytes(), 0o644),
            "/etc/supervisor/conf.d/zz-fake-bot-api.conf": (FAKE_BOT_PROGRAM.encode(), 0o644),
        }
    )
    with prepared_box(docker_client, agentbox_image, env, files, published=(*AGENTBOX_PORTS, BOT_API_PORT)) as box:
        states = box.wait_state("telegram", "RUNNING")
        assert states["cron"] == "STOPPED", "with Telegram on, cron runs inside the bot process"
        mcp_answers_beside(box)
        bot_api = box.url(BOT_API_PORT)

        def sent(contains: str) -> list[dict[str, Any]]:
            calls = httpx.get(f"{bot_api}/test/calls", timeout=10).json()
            return [c for c in calls if c["method"] == "sendMessage" and contains in c.get("text", "")]

        wait_for(lambda: httpx.get(f"{bot_api}/test/calls", timeout=10).json(), "the bot's first poll", box)
        httpx.post(f"{bot_api}/test/message", json={"chat_id": CHAT, "text": "hello from the chat"}, timeout=10)
        (answer,) = wait_for(lambda: sent("echo: hello from the chat"), "the agent's answer", box)[:1]
        assert answer["chat_id"] == str(CHAT)
        wait_for(lambda: sent("cron ping"), "the cron notification", box)
        code, output = box.exec("ls /workspace")
        assert code == 0 and {"chat_111", "jobs"} <= set(output.split()), output
        code, output = box.exec("cat /opt/e2e/calls.jsonl")
        calls = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
        assert calls and all(c["secrets_seen"] == [] and c["parent_environ_readable"] is False for c in calls), calls


def test_passthrough_hands_the_arguments_to_the_agent_cli(
    docker_client: docker.DockerClient, agentbox_image: str
) -> None:
    env = {"AICODEBOX_AGENT_BINARY": "/opt/e2e/passthrough-agent", "AIO_API_KEY": "not-for-the-agent"}
    cases = [
        (["agent", "-p", "hello world"], {}, "args:-p hello world"),
        (["-p", "by variable"], {"AICODEBOX_PASSTHROUGH_MODE": "1"}, "args:-p by variable"),
        (["echo", "a plain command"], {}, "a plain command"),
    ]
    for command, extra, expected in cases:
        with prepared_box(docker_client, agentbox_image, {**env, **extra}, e2e_files(), command, published=()) as box:
            status = box.container.wait(timeout=60)
            output = box.container.logs().decode(errors="replace")
            assert status["StatusCode"] == 0, output
            assert output.splitlines()[0] == expected, output
            if command[0] != "echo":
                assert output.splitlines()[1] == "user:sandbox cwd:/workspace key:none", output


def test_passthrough_with_mcp_mode_beside(docker_client: docker.DockerClient, agentbox_image: str) -> None:
    env = {"AICODEBOX_AGENT_BINARY": "/opt/e2e/passthrough-agent", "AICODEBOX_MCP_MODE": "1", "DISABLE_BROWSER": "true"}
    with prepared_box(docker_client, agentbox_image, env, e2e_files(), ["agent", "--wait"]) as box:
        mcp_answers_beside(box)
        states = box.wait_state("mcp-mode", "RUNNING")
        assert states["telegram"] == "STOPPED" and states["cron"] == "STOPPED"
        assert box.container.logs().decode(errors="replace").splitlines()[0] == "args:--wait"


def test_api_mode_wins_over_telegram_and_cron(docker_client: docker.DockerClient, agentbox_image: str) -> None:
    env = {
        "AICODEBOX_API_MODE": "1",
        "AICODEBOX_TELEGRAM_MODE": "1",
        "AICODEBOX_CRON_MODE": "1",
        "AICODEBOX_AVAILABLE_MODELS": "m",
        "DISABLE_BROWSER": "true",
    }
    with prepared_box(docker_client, agentbox_image, env, e2e_files()) as box:
        states = box.wait_state("agent-api", "RUNNING")
        assert (states["telegram"], states["cron"], states["mcp-mode"]) == ("STOPPED", "STOPPED", "STOPPED")
