"""Logging set-up shared by the services: plain text by default, one JSON object per line with
``LOG_FORMAT=json``, naming the request (``request_id``) a line was logged for. Our code never passes
secrets to loggers, but libraries log request lines (uvicorn's ``"WebSocket /cdp/devtools/…?api_key=…"
[accepted]``), so every record is scrubbed of credentials carried in a URL, and of control characters
that would forge a line, before it is written (:mod:`agentbox_common.redaction`)."""

from __future__ import annotations

import json
import logging
import os
import sys
import time

from .observability.request_ids import current_request_id
from .redaction import CLEAN_RECORD, escape_controls, redact_text


def redact(text: str) -> str:
    """``text`` as it may be logged: credentials redacted (:func:`redact_text`), controls escaped."""
    return escape_controls(redact_text(text))


_TRACEBACKS = logging.Formatter()


class RedactSecrets(logging.Filter):
    """Rewrites a record's message (arguments merged in) when it holds a credential in a URL or a
    control character."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, CLEAN_RECORD, False):
            return True
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:  # formatters use this text when it is set
            # A traceback keeps its lines, indented: an exception's message (which may quote a
            # request) can never start a line that reads as a record of its own.
            traceback = escape_controls(redact_text(_TRACEBACKS.formatException(record.exc_info)), lines=True)
            record.exc_text = "  " + traceback.replace("\n", "\n  ")
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = current_request_id()
        if request_id is not None:  # lines logged while a request is served name it
            entry["request_id"] = request_id
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):  # structured lines (the access log) keep their fields as keys
            entry.update(fields)
        if record.exc_info:
            entry["exception"] = record.exc_text or self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(level: str | None = None) -> None:
    """Configure the root logger once, from ``LOG_LEVEL`` and ``LOG_FORMAT``."""
    handler = logging.StreamHandler(sys.stderr)
    if os.environ.get("LOG_FORMAT", "").lower() == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactSecrets())
    # Neither format names where a line was logged from, nor the process or thread: the logging
    # HOWTO's "Optimization" settings skip finding them (a stack walk and a getpid per record,
    # a third of an access-log line's cost).
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel((level or os.environ.get("LOG_LEVEL", "INFO")).upper())
    # Per-request chatter from the HTTP client and the SDK's stateless transport says nothing useful.
    for noisy in ("httpx", "httpcore", "mcp.server.streamable_http", "mcp.server.streamable_http_manager"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
