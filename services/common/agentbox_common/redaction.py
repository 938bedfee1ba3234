"""Credentials never reach a log or a printout: a value that looks like one is replaced by its length
and a short hash, which is enough to tell two keys apart in an incident without revealing either.

A parameter is judged by its *decoded* name, the way the services read it (``api%5Fkey`` is the
gateway's ``api_key``, ``apiTok%65n`` MCP mode's ``apiToken``), and loosely: a name that only looks
like a credential (``api_key%00``, ``API-KEY``, ``x_token``) is redacted too, since a mistyped or
refused name still carries the real key. Text that is logged has its control characters escaped, so
a request can neither forge a line (``%0d%0a``) nor drive a terminal (ANSI escapes)."""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from urllib.parse import parse_qsl, quote, unquote_plus

#: Words that make a parameter name a credential's, matched inside its decoded, lowercased name
#: with everything but letters and digits removed: the gateway's ``api_key`` and ``ticket``, MCP
#: mode's ``apiToken``, and the usual names of other apps' credentials (the preview proxy's apps,
#: a CDP URL's ``token``), and a preview's ``agentbox_preview`` ticket.
SECRET_WORDS = (
    "key",
    "token",
    "ticket",
    "secret",
    "password",
    "passwd",
    "pwd",
    "auth",
    "session",
    "credential",
    "agentboxpreview",
)

_NOT_ALPHANUMERIC = re.compile(r"[^a-z0-9]+")
#: C0 controls (CR, LF, ESC starting ANSI sequences, NUL, ...), DEL and C1 controls.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: The same but LF, for text that is many lines by nature (a traceback).
_CONTROL_BUT_LF = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
#: ``name=value`` after ``?``, ``&`` or ``;`` in free text; the value ends where a URL would, less
#: the punctuation of the text around it (``…?token=abc: refused``).
_PARAMETER = re.compile(r"(?<=[?&;])([^=&#?\s\"'<>]+)=([^&#\s\"'<>]*?)(?=[:.,;)\]]*(?:[&#\s\"'<>]|$))")
#: ``scheme://user:password@`` in free text.
_USERINFO = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s\"'<>]*:)([^@/\s\"'<>]+)(?=@)")
_REDACTED = "[redacted "

#: A log record attribute saying its message is clean already (the access log builds its line from
#: redacted, escaped fields), so the logging filter need not scan it again.
CLEAN_RECORD = "agentbox_clean"


def redacted(value: str) -> str:
    digest = hashlib.sha256(value.encode()).hexdigest()[:8]
    return f"{_REDACTED}len={len(value)} sha256={digest}]"


@lru_cache(maxsize=1024)  # the same few names come again and again; the cache stays bounded
def is_secret_name(name: str) -> bool:
    """Whether a parameter called ``name`` (as sent: percent-decoded here, repeatedly) carries a credential."""
    for _ in range(3):  # api%255Fkey -> api%5Fkey -> api_key
        decoded = unquote_plus(name)
        if decoded == name:
            break
        name = decoded
    folded = _NOT_ALPHANUMERIC.sub("", name.lower())
    return any(word in folded for word in SECRET_WORDS)


def escape_controls(text: str, *, lines: bool = False) -> str:
    """``text`` with every control character written as ``\\xNN`` (one logged line stays one line);
    with ``lines``, LF is kept (a traceback's lines), CR and the rest are still escaped."""
    pattern = _CONTROL_BUT_LF if lines else _CONTROL
    if pattern.search(text) is None:
        return text
    return pattern.sub(lambda match: f"\\x{ord(match[0]):02x}", text)


def redact_query(query: str) -> str:
    """``query`` with the value of every credential parameter redacted, other parameters as sent
    (re-encoded: the result has no control characters)."""
    if not query:
        return ""
    parts = []
    for name, value in parse_qsl(query, keep_blank_values=True):
        shown = redacted(value) if is_secret_name(name) else value
        parts.append(f"{quote(name, safe='')}={quote(shown, safe='[]= ')}")
    return "&".join(parts)


def _parameter(match: re.Match[str]) -> str:
    value = match[2]
    if not value or value.startswith(_REDACTED.rstrip()) or not is_secret_name(match[1]):
        return match[0]
    return f"{match[1]}={redacted(unquote_plus(value))}"


def redact_text(text: str) -> str:
    """``text`` (a log message, a printed setting) with the password of every URL in it and the
    value of every credential parameter (:func:`is_secret_name`) replaced by :func:`redacted`."""
    if "=" in text:
        text = _PARAMETER.sub(_parameter, text)
    if "@" in text:
        text = _USERINFO.sub(lambda match: match[1] + redacted(unquote_plus(match[2])), text)
    return text
