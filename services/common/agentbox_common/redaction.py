"""Credentials never reach a log: a value that looks like one is replaced by its length and a short
hash, which is enough to tell two keys apart in an incident without revealing either."""

from __future__ import annotations

import hashlib
from urllib.parse import parse_qsl, quote

#: Query parameters (compared case-insensitively) that carry a credential: the gateway's key and
#: tickets, MCP mode's token, and the usual names of other apps' tokens (the preview proxy's apps).
SECRET_PARAMETERS = frozenset(
    {
        "api_key",
        "apikey",
        "apitoken",
        "ticket",
        "agentbox_preview",
        "token",
        "access_token",
        "key",
        "password",
        "secret",
        "auth",
    }
)


def redacted(value: str) -> str:
    digest = hashlib.sha256(value.encode()).hexdigest()[:8]
    return f"[redacted len={len(value)} sha256={digest}]"


def redact_query(query: str) -> str:
    """``query`` with the value of every credential parameter redacted; other parameters as sent."""
    if not query:
        return ""
    parts = []
    for name, value in parse_qsl(query, keep_blank_values=True):
        shown = redacted(value) if name.lower() in SECRET_PARAMETERS else value
        parts.append(f"{quote(name, safe='')}={quote(shown, safe='[]= ')}")
    return "&".join(parts)
