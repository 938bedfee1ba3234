"""``agentbox-telegram`` as a real process polling a local fake Bot API, with the stand-in agent CLI
(or the built-in agent on a scripted OpenAI-compatible server): allowed chats get answers, others get
nothing; one run per chat; ``/cancel`` kills the run's process group; uploads land in the chat's
workspace; ``[SEND_FILE:]`` stays inside it; replies to cron messages carry the job's context."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.mcp_mode.helpers import StandIn, wait_gone
from tests.mcp_mode.test_openai_agent import ScriptedModel, final
from tests.support.fake_bot_api import FakeBotApi, parsed
from tests.support.folders import new_folder
from tests.support.servers import console_script, run_command

from .conftest import TOKEN
from .helpers import write_jobs

TELEGRAM = console_script("agentbox-telegram")
CHAT = 111


@pytest.fixture
def start_bot(
    mode_env: dict[str, str], bot_api: tuple[FakeBotApi, str], tmp_path: Path
) -> Iterator[Callable[..., Any]]:
    """Start the bot (config: a telegram.yml mapping, else TELEGRAM_CHAT_ID=111); waits for its first poll."""
    fake, url = bot_api
    with contextlib.ExitStack() as stack:

        def start(config: dict[str, Any] | None = None, **env: str) -> subprocess.Popen:
            full = {
                **mode_env,
                "AICODEBOX_TELEGRAM_MODE_TOKEN": TOKEN,
                "AICODEBOX_TELEGRAM_MODE_API_URL": url,
                "TELEGRAM_CHAT_ID": str(CHAT),
                **env,
            }
            if config is not None:
                path = tmp_path / "telegram.yml"
                path.write_text(yaml.safe_dump(config))
                full["AICODEBOX_TELEGRAM_MODE_CONFIG"] = str(path)
            process = stack.enter_context(run_command([TELEGRAM], full))
            deadline = time.monotonic() + 30
            while not fake.polled():
                if process.poll() is not None or time.monotonic() > deadline:
                    output = process.stdout.read().decode(errors="replace") if process.stdout else ""
                    raise AssertionError(f"the bot did not start polling:\n{output}")
                time.sleep(0.05)
            return process

        yield start


@pytest.fixture
def chat_dir(workspace: Path) -> Path:
    """The allowed chat's own workspace folder, made before the bot starts, for files put there first."""
    return new_folder(workspace, f"chat_{CHAT}")


def test_an_allowed_chat_gets_the_agents_answer(start_bot, bot_api: tuple[FakeBotApi, str], workspace: Path) -> None:
    fake, _ = bot_api
    model = ScriptedModel([final("Hello **there**, see `x < y`")])
    with model.serve() as endpoint:
        start_bot(AICODEBOX_ADAPTER="openai", OPENAI_BASE_URL=endpoint, AICODEBOX_AVAILABLE_MODELS="local-model")
        asked = fake.message(CHAT, "say hello")
        (answer,) = fake.wait_sent("sendMessage", CHAT)
    assert answer["text"] == "Hello <b>there</b>, see <code>x &lt; y</code>"
    assert answer["parse_mode"] == "HTML"
    assert parsed(answer["reply_parameters"])["message_id"] == asked["message_id"]
    (request,) = model.requests
    assert request["messages"][-1] == {"role": "user", "content": "say hello"}
    assert str(workspace / f"chat_{CHAT}") in request["messages"][0]["content"]  # the chat's own workspace


def test_chats_and_users_not_allowed_get_nothing_and_run_nothing(
    start_bot, bot_api: tuple[FakeBotApi, str], stand_in: StandIn
) -> None:
    fake, _ = bot_api
    start_bot({"allowed_chats": [CHAT], "chats": {-222: {"allowed_users": [5]}}})
    fake.message(333, "ANSWER stranger")
    fake.message(333, "/status")
    fake.message(-222, "ANSWER wrong user", user_id=6)
    fake.message(-222, "ANSWER right user", user_id=5)
    (answer,) = fake.wait_sent("sendMessage", -222)
    assert answer["text"] == "right user"
    time.sleep(0.5)
    assert fake.sent("sendMessage", 333) == [] and len(fake.sent("sendMessage")) == 1
    assert [call["stdin"] for call in stand_in.calls()] == ["ANSWER right user"]
    (call,) = stand_in.calls()
    assert call["secrets_seen"] == []  # the Telegram token is not in the agent's environment


def test_one_run_per_chat_and_busy_otherwise(start_bot, bot_api: tuple[FakeBotApi, str], stand_in: StandIn) -> None:
    fake, _ = bot_api
    start_bot()
    fake.message(CHAT, "SLEEP 3\nANSWER first")
    stand_in.wait_for_calls(1)
    fake.message(CHAT, "ANSWER second")
    (busy,) = fake.wait_sent("sendMessage", CHAT, contains="busy")
    assert busy["text"] == "busy, try again later"
    fake.wait_sent("sendMessage", CHAT, contains="first")
    assert len(stand_in.calls()) == 1


def test_cancel_kills_the_runs_process_group(start_bot, bot_api: tuple[FakeBotApi, str], stand_in: StandIn) -> None:
    fake, _ = bot_api
    start_bot()
    fake.message(CHAT, "CHILD\nSLEEP 30")
    (call,) = stand_in.wait_for_calls(1)
    fake.message(CHAT, "/cancel")
    fake.wait_sent("sendMessage", CHAT, contains="cancelled")
    wait_gone([call["pid"], call["child"]])
    fake.message(CHAT, "ANSWER free again")  # the chat (and its workspace) is free at once
    fake.wait_sent("sendMessage", CHAT, contains="free again")


def test_an_upload_lands_in_the_chat_workspace(
    start_bot, bot_api: tuple[FakeBotApi, str], workspace: Path, stand_in: StandIn
) -> None:
    fake, _ = bot_api
    fake.add_file("doc-1", b"uploaded bytes\n")
    start_bot()
    document = {"file_id": "doc-1", "file_unique_id": "u-1", "file_name": "../../notes.txt"}
    fake.message(CHAT, document=document)
    (saved,) = fake.wait_sent("sendMessage", CHAT)
    assert saved["text"] == "saved notes.txt"
    assert (workspace / f"chat_{CHAT}" / "notes.txt").read_bytes() == b"uploaded bytes\n"
    fake.add_file("doc-2", b"data")
    fake.message(
        CHAT, document={"file_id": "doc-2", "file_unique_id": "u-2", "file_name": "d.csv"}, caption="ANSWER read it"
    )
    fake.wait_sent("sendMessage", CHAT, contains="read it")
    (call,) = stand_in.calls()
    assert "uploaded the file d.csv" in call["stdin"] and call["cwd"] == str(workspace / f"chat_{CHAT}")
    fake.message(CHAT, document={"file_id": "gone", "file_unique_id": "u-3", "file_name": "gone.bin"})
    fake.wait_sent("sendMessage", CHAT, contains="error:")  # the download failed: said, not swallowed
    assert not (workspace / f"chat_{CHAT}" / "gone.bin").exists()


def peak_rss_kib(process: subprocess.Popen) -> int:
    status = Path(f"/proc/{process.pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])


def test_an_upload_bigger_than_declared_stops_at_the_cap(
    start_bot, bot_api: tuple[FakeBotApi, str], workspace: Path
) -> None:
    """Issue 26 item 10: a file declared as 10 bytes and served as 300 MiB is read only up to
    ``AICODEBOX_MAX_UPLOAD_BYTES`` (1 MiB here), streamed to disk, then refused with a clear message;
    the bot's memory stays flat and nothing is left in the workspace."""
    fake, _ = bot_api
    fake.add_stream("huge", size=300 * 1024 * 1024, declared=10)
    fake.add_file("small", b"fits")
    process = start_bot(AICODEBOX_MAX_UPLOAD_BYTES=str(1024 * 1024))
    before = peak_rss_kib(process)
    fake.message(CHAT, document={"file_id": "huge", "file_unique_id": "u-1", "file_name": "big.bin", "file_size": 10})
    (refused,) = fake.wait_sent("sendMessage", CHAT, timeout=60)
    assert refused["text"] == (
        "big.bin: larger than the upload limit of 1048576 bytes (AICODEBOX_MAX_UPLOAD_BYTES), not saved"
    )
    assert fake.served["huge"] < 64 * 1024 * 1024  # the read stopped near the cap (plus socket buffers)
    assert peak_rss_kib(process) - before < 64 * 1024, (before, peak_rss_kib(process))
    chat_dir = workspace / f"chat_{CHAT}"
    assert not list(chat_dir.iterdir())  # neither the file nor its temporary part
    fake.add_stream("declared", size=10, declared=2 * 1024 * 1024)  # declared too big: not even fetched
    fake.message(CHAT, document={"file_id": "declared", "file_unique_id": "u-2", "file_name": "d.bin"})
    fake.wait_sent("sendMessage", CHAT, count=2, contains="larger than the upload limit")
    assert fake.served["declared"] == 0
    fake.message(CHAT, document={"file_id": "small", "file_unique_id": "u-3", "file_name": "small.txt"})
    fake.wait_sent("sendMessage", CHAT, contains="saved small.txt")
    assert sorted(p.name for p in chat_dir.iterdir()) == ["small.txt"]
    assert (chat_dir / "small.txt").read_bytes() == b"fits"


def test_an_upload_never_writes_through_a_symlink_out_of_the_chat_workspace(
    start_bot, bot_api: tuple[FakeBotApi, str], workspace: Path, chat_dir: Path
) -> None:
    fake, _ = bot_api
    (workspace / "outside.txt").write_text("keep")
    (chat_dir / "notes.txt").symlink_to(workspace / "outside.txt")
    fake.add_file("doc-1", b"overwritten?")
    start_bot()
    fake.message(CHAT, document={"file_id": "doc-1", "file_unique_id": "u-1", "file_name": "notes.txt"})
    (refused,) = fake.wait_sent("sendMessage", CHAT, contains="error:")
    assert "path escapes workspace root" in refused["text"]
    assert (workspace / "outside.txt").read_text() == "keep"
    assert sorted(p.name for p in chat_dir.iterdir()) == ["notes.txt"]  # no temporary file left


def test_send_file_sends_a_workspace_file_and_refuses_one_outside(
    start_bot, bot_api: tuple[FakeBotApi, str], workspace: Path, chat_dir: Path
) -> None:
    fake, _ = bot_api
    (chat_dir / "report.txt").write_text("the report")
    (workspace / "secret.txt").write_text("outside the chat workspace")
    start_bot()
    fake.message(CHAT, "ANSWER here: [SEND_FILE: report.txt] [SEND_FILE: ../secret.txt]")
    (document,) = fake.wait_sent("sendDocument", CHAT)
    assert document["document"] == {"filename": "report.txt", "content": b"the report"}
    (refused,) = fake.wait_sent("sendMessage", CHAT, contains="outside")
    assert refused["text"] == "[SEND_FILE] ../secret.txt: outside the workspace, not sent"
    assert fake.sent("sendMessage", CHAT)[0]["text"] == "here:"
    fake.message(CHAT, "/fetch /etc/passwd")  # absolute = relative to the workspace: not there
    fake.wait_sent("sendMessage", CHAT, contains="no such file")
    assert len(fake.sent("sendDocument")) == 1


def test_model_override_and_reply_to_a_cron_message(
    start_bot, bot_api: tuple[FakeBotApi, str], stand_in: StandIn, tmp_path: Path, workspace: Path
) -> None:
    fake, _ = bot_api
    jobs = write_jobs(
        tmp_path / "cron.yml",
        [
            {"name": "digest", "schedule": "* * * * * *", "workspace": "news", "instruction": "collect news"},
        ],
        telegram_chat_id=CHAT,
    )
    start_bot(AICODEBOX_CRON_MODE="1", AICODEBOX_CRON_MODE_FILE=str(jobs), AICODEBOX_AVAILABLE_MODELS="sonnet,opus")
    (notification,) = fake.wait_sent("sendMessage", CHAT, contains="cron digest")[:1]
    fake.message(CHAT, "/model opus")
    fake.wait_sent("sendMessage", CHAT, contains="model: opus")
    overrides = json.loads((tmp_path / "home" / ".aicodebox" / "telegram_overrides.json").read_text())
    assert overrides == {str(CHAT): {"model": "opus"}}
    original = {
        "message_id": notification["result"]["message_id"],
        "date": 0,
        "chat": {"id": CHAT, "type": "private"},
        "text": notification["text"],
    }
    for _attempt in range(5):  # the job's next tick may hold its workspace for a moment: busy, so ask again
        if ask_until_not_busy(fake, original):
            break
    fake.wait_sent("sendMessage", CHAT, contains="noted")
    reply = next(call for call in stand_in.calls() if "which items?" in call["stdin"])
    assert "scheduled job 'digest'" in reply["stdin"]
    assert "Job instruction:\ncollect news" in reply["stdin"] and "Job result:\necho: collect news" in reply["stdin"]
    assert reply["cwd"] == str(workspace / "news")  # the job's workspace
    assert reply["argv"][reply["argv"].index("--model") + 1] == "opus"


def ask_until_not_busy(fake: FakeBotApi, original: dict[str, Any]) -> bool:
    """Reply to ``original``; True once answered, False when the answer was busy."""

    def texts(word: str) -> int:
        return sum(word in call["text"] for call in fake.sent("sendMessage", CHAT))

    busy = texts("busy")
    fake.message(CHAT, "ANSWER noted\nwhich items?", reply_to_message=original)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if texts("noted"):
            return True
        if texts("busy") > busy:
            return False
        time.sleep(0.05)
    raise AssertionError("the reply was not answered")


def test_a_missing_token_exits_1_with_the_message(mode_env: dict[str, str], stand_in: StandIn) -> None:
    done = subprocess.run([TELEGRAM], env=mode_env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert done.stderr.strip() == "AICODEBOX_TELEGRAM_MODE_TOKEN not set"


def test_a_bad_telegram_yml_is_refused(mode_env: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "telegram.yml"
    config.write_text("allowed_chats: [not-a-number]\n")
    done = subprocess.run(
        [TELEGRAM],
        env={**mode_env, "AICODEBOX_TELEGRAM_MODE_TOKEN": TOKEN, "AICODEBOX_TELEGRAM_MODE_CONFIG": str(config)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert f"{config}: allowed_chats.0:" in done.stderr and "Traceback" not in done.stderr
    assert TOKEN not in done.stderr


def test_a_rejected_token_exits_1_without_showing_it(mode_env: dict[str, str], bot_api: tuple[FakeBotApi, str]) -> None:
    _, url = bot_api
    wrong = "999:not-the-fake-bots-token"
    done = subprocess.run(
        [TELEGRAM],
        env={**mode_env, "AICODEBOX_TELEGRAM_MODE_TOKEN": wrong, "AICODEBOX_TELEGRAM_MODE_API_URL": url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert f"the Bot API at {url} rejected AICODEBOX_TELEGRAM_MODE_TOKEN" in done.stderr
    assert wrong not in done.stderr + done.stdout and "Traceback" not in done.stderr


def test_the_model_picker_sets_an_override(start_bot, bot_api: tuple[FakeBotApi, str], stand_in: StandIn) -> None:
    fake, _ = bot_api
    start_bot(AICODEBOX_AVAILABLE_MODELS="sonnet,opus")
    fake.message(CHAT, "/model")
    (picker,) = fake.wait_sent("sendMessage", CHAT, contains="model: (default)")
    buttons = [row[0]["callback_data"] for row in parsed(picker["reply_markup"])["inline_keyboard"]]
    assert buttons == ["model:sonnet", "model:opus", "model:default"]
    fake.push(
        {
            "callback_query": {
                "id": "cb-1",
                "chat_instance": "ci",
                "data": "model:sonnet",
                "from": {"id": CHAT, "is_bot": False, "first_name": "tester"},
                "message": {**picker["result"], "chat": {"id": CHAT, "type": "private"}},
            }
        }
    )
    fake.wait_sent("editMessageText", contains="model: sonnet")
    fake.message(CHAT, "/model gpt-unknown")
    fake.wait_sent("sendMessage", CHAT, contains="unknown model 'gpt-unknown'")
    fake.message(CHAT, "ANSWER picked")
    fake.wait_sent("sendMessage", CHAT, contains="picked")
    (call,) = stand_in.calls()
    assert call["argv"][call["argv"].index("--model") + 1] == "sonnet"
    fake.message(CHAT, "/status")
    status = fake.wait_sent("sendMessage", CHAT, contains="idle")[0]["text"]
    assert "model: sonnet" in status and f"workspace: chat_{CHAT}" in status
