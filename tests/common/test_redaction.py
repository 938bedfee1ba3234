"""Credentials are judged by their decoded name and never logged or printed; logged text has its
control characters escaped (issue 26 items 8, 9 and 12)."""

from __future__ import annotations

import logging
import sys

import pytest

from agentbox_common.logging import JsonFormatter, RedactSecrets
from agentbox_common.redaction import escape_controls, is_secret_name, redact_query, redact_text, redacted

KEY = "sekrit-key-0123456789"


@pytest.mark.parametrize(
    "name",
    ["api_key", "api%5Fkey", "%61pi_key", "API%5FKEY", "api_key%00", "api%255Fkey", "apiTok%65n", "ticket", "x-token"],
)
def test_credential_names_are_judged_decoded(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["verbose", "path", "cmd", "x", ""])
def test_other_names_are_not(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize("name", ["api%5Fkey", "%61pi_key", "api_key%00", "apiTok%65n", "api%255Fkey", "TICKET"])
def test_query_never_shows_the_value(name: str) -> None:
    shown = redact_query(f"verbose=1&{name}={KEY}")
    assert KEY not in shown and "[redacted len=21 sha256=" in shown and shown.startswith("verbose=1&")


def test_text_redacts_encoded_names_and_passwords_in_urls() -> None:
    line = f'127.0.0.1:1 - "WebSocket /v1/shell/ws?x=1&api%5Fkey={KEY}" [accepted]'
    assert KEY not in redact_text(line) and "x=1&api%5Fkey=[redacted len=21" in redact_text(line)
    url = f"http://user:{KEY}@127.0.0.1:9222/x?apiTok%65n={KEY}&page=2"
    shown = redact_text(url)
    assert KEY not in shown and shown.startswith("http://user:[redacted len=21") and shown.endswith("&page=2")
    assert redact_text("http://127.0.0.1:9222 and a=b?c") == "http://127.0.0.1:9222 and a=b?c"


def test_redacted_values_are_not_redacted_again() -> None:
    once = redact_text(f"/x?api_key={KEY}")
    assert redact_text(once) == once


def test_controls_are_escaped() -> None:
    assert escape_controls("/x\r\nFORGED line\x1b[31m\x00\x9b\x7f") == "/x\\x0d\\x0aFORGED line\\x1b[31m\\x00\\x9b\\x7f"
    assert escape_controls("plain ü") == "plain ü"


def test_the_log_filter_redacts_and_escapes_any_record() -> None:
    record = logging.LogRecord("uvicorn.error", logging.INFO, __file__, 1, '"WebSocket %s" [accepted]', None, None)
    record.args = (f"/a\r\nFORGED?%61pi_key={KEY}",)
    RedactSecrets().filter(record)
    message = record.getMessage()
    assert KEY not in message and "\n" not in message and "\\x0d\\x0aFORGED?%61pi_key=[redacted" in message


def test_text_around_a_url_is_not_part_of_its_value() -> None:
    assert redact_text(f"http://h/x?token={KEY}: refused.") == f"http://h/x?token={redacted(KEY)}: refused."
    assert redact_text(f"(see /x?ticket={KEY})") == f"(see /x?ticket={redacted(KEY)})"
    jwt = "aaa.bbb.ccc"
    assert redact_text(f"/x?token={jwt}") == f"/x?token={redacted(jwt)}"


def test_a_traceback_keeps_its_lines_but_loses_credentials_and_escapes() -> None:
    try:
        raise ConnectionError(f"http://up/mcp?api_key={KEY} refused\r\nFORGED\x1b[2J")
    except ConnectionError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", None, sys.exc_info())
    RedactSecrets().filter(record)
    for formatter in (logging.Formatter(), JsonFormatter()):
        shown = formatter.format(record)
        assert KEY not in shown and "\x1b" not in shown and "\r" not in shown, shown
        assert "refused\\x0d" in shown.replace("\\\\", "\\") and "FORGED\\x1b[2J" in shown.replace("\\\\", "\\")
    text = logging.Formatter().format(record)
    assert text.startswith("failed\n  Traceback (most recent call last):\n"), text
    assert not [line for line in text.splitlines()[1:] if not line.startswith("  ")], text
