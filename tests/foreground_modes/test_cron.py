"""``agentbox-cron`` as a real process with the stand-in agent CLI: a seconds schedule runs repeatedly
and records its history, an overlapping tick is skipped, placeholders are expanded, results are
posted to a (fake) Bot API, and bad job files stop it with a message instead of a traceback."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.mcp_mode.helpers import StandIn, wait_gone
from tests.support.fake_bot_api import FakeBotApi
from tests.support.servers import console_script, run_command, stop_group

from .conftest import TOKEN
from .helpers import summaries, wait_summaries, write_jobs

CRON = console_script("agentbox-cron")


def output_of(process: subprocess.Popen) -> str:
    assert process.stdout is not None
    return process.stdout.read().decode(errors="replace")


def test_a_seconds_schedule_runs_repeatedly_and_keeps_history(
    tmp_path: Path, mode_env: dict[str, str], stand_in: StandIn, workspace: Path
) -> None:
    jobs = write_jobs(
        tmp_path / "cron.yml",
        [
            {"name": "tick", "schedule": "*/2 * * * * *", "instruction": "ANSWER done {job_name}"},
        ],
        model="sonnet",
        append_system_prompt="be brief",
    )
    env = {**mode_env, "AICODEBOX_CRON_MODE_FILE": str(jobs)}
    history = Path(mode_env["AICODEBOX_CRON_MODE_HISTORY_DIR"])
    with run_command([CRON], env):
        runs = wait_summaries(history, "tick", 2, timeout=15)
    assert [run["status"] for run in runs[:2]] == ["ok", "ok"]
    assert all(run["result"] == "done tick" for run in runs[:2])
    started = [time.mktime(time.strptime(run["started"][:19], "%Y-%m-%dT%H:%M:%S")) for run in runs[:2]]
    assert 1 <= started[1] - started[0] <= 3  # every two seconds
    run_dir = Path(runs[0]["run_dir"])
    assert run_dir.parent == history / "history" / "workspace"
    assert run_dir.name.endswith("-tick")
    assert sorted(p.name for p in run_dir.iterdir()) == ["meta.json", "result.txt", "stderr.log", "stdout.log"]
    assert (run_dir / "result.txt").read_text() == "done tick"
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["job"] == "tick" and meta["exit_code"] == 0 and meta["workspace"] == str(workspace)
    call = stand_in.calls()[0]
    assert call["cwd"] == str(workspace)
    argv = call["argv"]
    assert "--continue" in argv  # cron continues the workspace's session by default
    assert argv[argv.index("--model") + 1] == "sonnet"
    appended = argv[argv.index("--append-system-prompt") + 1]
    assert appended.startswith("be brief") and str(history / "history" / "workspace" / "tick.jsonl") in appended


def test_placeholders_and_a_job_workspace(
    tmp_path: Path, mode_env: dict[str, str], stand_in: StandIn, workspace: Path
) -> None:
    jobs = write_jobs(
        tmp_path / "cron.yml",
        [
            {
                "name": "place",
                "schedule": "* * * * * *",
                "workspace": "reports/daily",
                "no_continue": True,
                "instruction": "ANSWER ok\nname={job_name} ws={workspace} at={system_datetime} keep={other}",
            }
        ],
    )
    history = Path(mode_env["AICODEBOX_CRON_MODE_HISTORY_DIR"])
    with run_command([CRON], {**mode_env, "AICODEBOX_CRON_MODE_FILE": str(jobs)}):
        (run,) = wait_summaries(history, "place", 1, slug="reports_daily")[:1]
    (call,) = stand_in.calls()[:1]
    line = call["stdin"].splitlines()[1]
    assert line.startswith(f"name=place ws={workspace / 'reports' / 'daily'} at=20")
    assert line.endswith(" keep={other}")  # unknown braces are left alone
    assert call["cwd"] == str(workspace / "reports" / "daily")
    assert "--continue" not in call["argv"]
    assert run["workspace"] == str(workspace / "reports" / "daily")


def test_an_overlapping_tick_is_skipped(tmp_path: Path, mode_env: dict[str, str], stand_in: StandIn) -> None:
    jobs = write_jobs(
        tmp_path / "cron.yml",
        [
            {"name": "slow", "schedule": "* * * * * *", "instruction": "SLEEP 3.5\nANSWER slow"},
        ],
    )
    history = Path(mode_env["AICODEBOX_CRON_MODE_HISTORY_DIR"])
    with run_command([CRON], {**mode_env, "AICODEBOX_CRON_MODE_FILE": str(jobs)}) as process:
        stand_in.wait_for_calls(1, timeout=10)
        time.sleep(2.5)
        assert len(stand_in.calls()) == 1  # ticks during the run started nothing
        wait_summaries(history, "slow", 1, timeout=10)
        stop_group(process)
        log = output_of(process)
    assert "cron job slow: tick at" in log and "skipped, the previous run is still going" in log


def test_stopping_cron_kills_the_run_in_flight(tmp_path: Path, mode_env: dict[str, str], stand_in: StandIn) -> None:
    jobs = write_jobs(
        tmp_path / "cron.yml", [{"name": "long", "schedule": "* * * * * *", "instruction": "CHILD\nSLEEP 60"}]
    )
    with run_command([CRON], {**mode_env, "AICODEBOX_CRON_MODE_FILE": str(jobs)}) as process:
        (call,) = stand_in.wait_for_calls(1, timeout=10)
        stop_group(process)  # SIGTERM; the agent runs in its own session, so cron must kill it
        assert process.returncode == 0
    wait_gone([call["pid"], call["child"]])


def test_results_are_posted_to_telegram(
    tmp_path: Path, mode_env: dict[str, str], bot_api: tuple[FakeBotApi, str]
) -> None:
    fake, url = bot_api
    jobs = write_jobs(
        tmp_path / "cron.yml",
        [
            # One workspace, so the three take turns (a tick finding it busy is skipped): each its own second.
            {"name": "report", "schedule": "*/3 * * * * *", "instruction": "ANSWER **all good**"},
            {"name": "quiet", "schedule": "1-59/3 * * * * *", "instruction": "ANSWER shh", "telegram_chat_id": 0},
            {"name": "empty", "schedule": "2-59/3 * * * * *", "instruction": "ANSWER", "telegram_chat_id": 555},
        ],
        telegram_chat_id=777,
    )
    env = {
        **mode_env,
        "AICODEBOX_CRON_MODE_FILE": str(jobs),
        "AICODEBOX_TELEGRAM_MODE_TOKEN": TOKEN,
        "AICODEBOX_TELEGRAM_MODE_API_URL": url,
    }
    history = Path(mode_env["AICODEBOX_CRON_MODE_HISTORY_DIR"])
    with run_command([CRON], env):
        (message,) = fake.wait_sent("sendMessage", 777)[:1]
        (empty,) = fake.wait_sent("sendMessage", 555)[:1]
        wait_summaries(history, "quiet", 1)
    assert message["parse_mode"] == "HTML"
    assert message["text"] == "<b>cron report</b>\n\n<b>all good</b>"
    assert "(empty result)" in empty["text"]  # an empty successful result still notifies
    assert all("shh" not in str(call.get("text")) for call in fake.sent("sendMessage"))
    run_dir = Path(summaries(history, "report")[0]["run_dir"])
    notified = json.loads((run_dir / "telegram.json").read_text())
    assert notified["chat_id"] == 777 and notified["message_ids"]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "does not exist"),
        ("jobs: [unclosed", "not valid YAML"),
        ("- just a list", "expected a mapping"),
        ("jobs: []", "jobs: List should have at least 1 item"),
        ("jobs:\n- {name: a, schedule: '61 * * * *', instruction: x}", "jobs.0.schedule: invalid schedule"),
        ("jobs:\n- {name: 'bad name', schedule: '* * * * *', instruction: x}", "jobs.0.name"),
        ("jobs:\n- {name: a, instruction: x}", "jobs.0.schedule: Field required"),
        ("jobs:\n- {name: a, schedule: '* * * * *', instruction: x, typo: 1}", "jobs.0.typo"),
        (
            "jobs:\n- {name: a, schedule: '* * * * *', instruction: x}\n- {name: a, schedule: '* * * * *', "
            "instruction: y}",
            "job names must be unique; repeated: a",
        ),
        ("jobs:\n- {name: a, schedule: '* * * * *', instruction: x, workspace: ../up}", "jobs.0.workspace"),
        (
            "telegram_chat_id: 5\njobs:\n- {name: a, schedule: '* * * * *', instruction: x}",
            "AICODEBOX_TELEGRAM_MODE_TOKEN is not set",
        ),
    ],
)
def test_a_bad_job_file_is_refused_with_a_message(
    tmp_path: Path, mode_env: dict[str, str], stand_in: StandIn, content: str | None, problem: str
) -> None:
    path = tmp_path / "cron.yml"
    if content is not None:
        path.write_text(content)
    done = subprocess.run(
        [CRON], env={**mode_env, "AICODEBOX_CRON_MODE_FILE": str(path)}, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2
    assert problem in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert stand_in.calls() == []


def test_no_job_file_variable(mode_env: dict[str, str]) -> None:
    done = subprocess.run([CRON], env=mode_env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "AICODEBOX_CRON_MODE_FILE is not set" in done.stderr and "Traceback" not in done.stderr
