"""What sandboxd's ``GET /v1/metadata`` shows of the sandbox: the variables an orchestrator injected
under one prefix (``SANDBOX_`` by default), never one whose name marks it a credential. Untrusted
code in the sandbox can ask for it, so a secret must not be served even under the prefix."""

from __future__ import annotations

import os
from collections.abc import Mapping

#: Name parts that withhold a variable (sandboxd's list).
CREDENTIAL_MARKERS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CRED", "KEY", "AUTH", "BEARER", "PRIVATE", "CERT")


def runtime_metadata(prefix: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables of ``environ`` (this process's) under ``prefix``, credentials left out."""
    source = os.environ if environ is None else environ
    return {
        name: value
        for name, value in source.items()
        if name.startswith(prefix) and not any(marker in name.upper() for marker in CREDENTIAL_MARKERS)
    }
