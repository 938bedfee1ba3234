"""``/v1/browser/page/record`` and ``/v1/display/record`` through the agent-sandbox SDK: the recording
is an MP4 that ffprobe reads, of about the recorded length and at the page's size; bad input is 4xx."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import httpx
import pytest
from agent_sandbox import AsyncSandbox, Sandbox
from agent_sandbox.core.api_error import ApiError
from agent_sandbox.types.display_record_result import DisplayRecordResult

from tests.support.requirements import needs_program

pytestmark = [
    pytest.mark.chromium,
    needs_program("ffprobe", "ffmpeg"),
]

ANIMATED = (
    "data:text/html,<title>Moving</title><div id=box style='width:100px;height:100px;background:red'></div>"
    "<script>let n=0;setInterval(()=>{box.style.marginLeft=(n++%50*4)+'px'},50)</script>"
)


def probe(path: Path) -> dict:
    answer = subprocess.run(
        [
            "ffprobe",
            "-v",
            "error",
            "-show_entries",
            "format=duration:stream=codec_name,width,height",
            "-of",
            "json",
            str(path),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return json.loads(answer.stdout)


@pytest.fixture
def client(gateway: str) -> Sandbox:
    return Sandbox(base_url=gateway, timeout=60)


def test_record_once_writes_a_playable_mp4(client: Sandbox, tmp_path: Path) -> None:
    client.browser_page.navigate(url=ANIMATED)
    target = tmp_path / "once.mp4"
    answer = client.browser_page.record(action="once", save_path=str(target), duration=1.5, fps=10)
    assert answer.data["status"] == "stopped" and answer.data["file_size_bytes"] == target.stat().st_size
    info = probe(target)
    assert info["streams"][0]["codec_name"] == "h264"
    assert 1.0 <= float(info["format"]["duration"]) <= 2.5


def test_start_pause_resume_stop(client: Sandbox, tmp_path: Path) -> None:
    client.browser_page.navigate(url=ANIMATED)
    target = tmp_path / "parts.mp4"
    assert client.browser_page.record(action="start", save_path=str(target), fps=10).data["status"] == "recording"
    with pytest.raises(ApiError) as twice:
        client.browser_page.record(action="start")
    assert twice.value.status_code == 409
    asyncio.run(asyncio.sleep(0.6))
    assert client.browser_page.record(action="pause").data["status"] == "paused"
    asyncio.run(asyncio.sleep(0.6))
    assert client.browser_page.record(action="resume").data["status"] == "recording"
    asyncio.run(asyncio.sleep(0.6))
    stopped = client.browser_page.record(action="stop").data
    assert stopped["status"] == "stopped" and 1.0 <= stopped["duration"] <= 2.0
    assert 0.8 <= float(probe(target)["format"]["duration"]) <= 2.2  # the pause is not in the video


def test_display_record_with_size_and_max_duration(gateway: str, tmp_path: Path) -> None:
    async def scenario() -> tuple[DisplayRecordResult, DisplayRecordResult]:
        client = AsyncSandbox(base_url=gateway, timeout=60)
        await client.browser_page.navigate(url=ANIMATED)
        target = tmp_path / "made" / "display.mp4"  # the missing directory is made, as aiod does
        started = await client.display.record(
            action="start", save_path=str(target), width=320, height=240, max_duration=1, crf=30
        )
        await asyncio.sleep(2.0)  # it stops by itself after max_duration
        return started.data, (await client.display.record(action="status")).data

    started, status = asyncio.run(scenario())
    assert started.status == "recording" and status.status == "stopped"
    stream = probe(Path(status.save_path))["streams"][0]
    assert (stream["width"], stream["height"]) == (320, 240)


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/v1/browser/page/record", {"action": "rewind"}, 422),
        ("/v1/browser/page/record", {"action": "stop"}, 409),
        ("/v1/browser/page/record", {"action": "start", "save_path": "/no/such/dir/x.mp4"}, 404),
        ("/v1/display/record", {}, 422),
        ("/v1/display/record", {"action": "start", "fps": 0}, 422),
        ("/v1/display/record", {"action": "start", "save_path": "/proc/no/x.mp4"}, 400),
    ],
)
def test_bad_input_is_a_4xx_envelope(gateway: str, path: str, body: dict, status: int) -> None:
    response = httpx.post(f"{gateway}{path}", json=body, timeout=30)
    assert response.status_code == status, response.text
    assert response.json()["success"] is False
