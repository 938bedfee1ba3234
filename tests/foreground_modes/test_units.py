"""The foreground modes' small pieces: answer rendering and chunking, ``[SEND_FILE:]`` parsing and
confinement, upload names, telegram.yml merging and overrides, cron schedules and placeholders."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pytest

from agentbox_common.settings import ConfigError
from agentbox_mcp_mode.cron.config import ResolvedJob, load_jobs
from agentbox_mcp_mode.cron.history import workspace_slug
from agentbox_mcp_mode.cron.scheduler import expand
from agentbox_mcp_mode.telegram_bot.client import render_chunks
from agentbox_mcp_mode.telegram_bot.files import FileRefused, extract_send_files, open_sendable, upload_name
from agentbox_mcp_mode.telegram_bot.settings import Overrides, load_rules

from .helpers import write_jobs


def test_long_answers_are_cut_within_the_limit_with_balanced_tags() -> None:
    answer = "**Report**\n\n```python\n" + "print('x < y')\n" * 600 + "```\nthe end"
    chunks = render_chunks(answer)
    assert len(chunks) >= 3
    assert all(len(chunk) <= 4096 for chunk in chunks)
    for chunk in chunks:
        opened = re.findall(r"<(pre|code|b)\b", chunk)
        closed = re.findall(r"</(pre|code|b)>", chunk)
        assert sorted(opened) == sorted(closed), chunk[:200]
    assert chunks[0].startswith("<b>Report</b>") and chunks[-1].rstrip().endswith("the end")
    assert "x &lt; y" in chunks[1]


def test_send_file_markers() -> None:
    text, paths = extract_send_files("Done.\n[SEND_FILE: out/report.pdf]\n[SEND_FILE:a b.txt ] bye")
    assert paths == ["out/report.pdf", "a b.txt"]
    assert text == "Done.\n\n bye"


def sendable(directory: Path, path: str) -> Path:
    """Where the file ``open_sendable`` opens is (closed again: the check sends nothing)."""
    found = open_sendable(directory, path)
    found.opened.close()
    return found.location


def test_sendable_is_confined_to_the_workspace(tmp_path: Path) -> None:
    root = tmp_path / "chat"
    root.mkdir()
    (root / "ok.txt").write_text("fine")
    (tmp_path / "secret").write_text("no")
    (root / "link").symlink_to(tmp_path / "secret")
    assert sendable(root, "ok.txt") == root / "ok.txt"
    assert sendable(root, "/ok.txt") == root / "ok.txt"  # absolute = relative to the workspace
    for outside in ("../secret", "link", "/../secret"):
        with pytest.raises(FileRefused, match="outside the workspace"):
            sendable(root, outside)
    with pytest.raises(FileRefused, match="no such file"):
        sendable(root, "missing.txt")


def test_upload_names_never_leave_the_directory() -> None:
    assert upload_name("../../etc/passwd", "f") == "passwd"
    assert upload_name("..\\..\\x.txt", "f") == "x.txt"
    assert upload_name("..", "fallback") == "fallback"
    assert upload_name(None, "fallback") == "fallback"


def test_chat_settings_merge_default_chat_and_overrides(tmp_path: Path) -> None:
    config = tmp_path / "telegram.yml"
    config.write_text(
        "allowed_chats: [1]\n"
        "default: {model: sonnet, continue: false, thinking: low}\n"
        "chats:\n  -5: {model: opus, workspace: team, allowed_users: [7]}\n"
    )
    rules = load_rules(config, {})
    assert rules.settings(2, {}) is None
    one = rules.settings(1, {})
    assert one is not None and (one.model, one.effort, one.continue_session, one.workspace) == (
        "sonnet",
        "low",
        False,
        "chat_1",
    )
    team = rules.settings(-5, {"model": "haiku"})
    assert team is not None and (team.model, team.workspace, team.allowed_users) == ("haiku", "team", {7})
    fallback = load_rules(tmp_path / "missing.yml", {"TELEGRAM_CHAT_ID": "42"})
    assert fallback.settings(42, {}) is not None and fallback.settings(1, {}) is None
    with pytest.raises(ConfigError, match="TELEGRAM_CHAT_ID"):
        load_rules(tmp_path / "missing.yml", {"TELEGRAM_CHAT_ID": "me"})


def test_overrides_are_persisted_and_reset(tmp_path: Path) -> None:
    path = tmp_path / "o" / "overrides.json"
    overrides = Overrides(path)
    overrides.set(1, "model", "opus")
    overrides.set(1, "effort", "high")
    assert Overrides(path).of(1) == {"model": "opus", "effort": "high"}
    for word in ("reset", "DEFAULT", "__reset__", "clear", "none"):
        overrides.set(1, "model", "opus")
        overrides.set(1, "model", word)
        assert "model" not in json.loads(path.read_text())["1"]
    assert [p.name for p in path.parent.iterdir()] == ["overrides.json"]  # no temp files left


def test_schedules_with_and_without_seconds(tmp_path: Path) -> None:
    jobs = load_jobs(
        write_jobs(
            tmp_path / "c.yml",
            [
                {"name": "minutes", "schedule": "*/5 * * * *", "instruction": "x"},
                {
                    "name": "seconds",
                    "schedule": "*/10 * * * * *",
                    "instruction": "y",
                    "effort": "high",
                    "workspace": "a/b",
                },
            ],
            model="m",
            effort="low",
            telegram_chat_id=9,
        )
    )
    assert [(j.name, j.thinking, j.workspace, j.model, j.telegram_chat_id) for j in jobs] == [
        ("minutes", "low", "", "m", 9),
        ("seconds", "high", "a/b", "m", 9),
    ]
    with pytest.raises(ConfigError, match="invalid schedule"):
        load_jobs(write_jobs(tmp_path / "d.yml", [{"name": "n", "schedule": "* * *", "instruction": "x"}]))


def test_placeholders_and_slugs() -> None:
    job = ResolvedJob("daily", "* * * * *", "", "", "", "", "", "", False, None)
    when = datetime(2026, 1, 2, 3, 4, 5).astimezone()
    text = expand("{job_name} in {workspace} at {system_datetime}, {unknown} {{x}}", job, Path("/w/r"), when)
    assert text == f"daily in /w/r at {when.isoformat(timespec='seconds')}, {{unknown}} {{{{x}}}}"
    assert workspace_slug("") == "workspace" and workspace_slug("reports/daily") == "reports_daily"
