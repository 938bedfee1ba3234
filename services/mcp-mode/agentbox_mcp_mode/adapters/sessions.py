"""The built-in agent's conversation store, so ``no_continue=false`` and ``resume=<id>`` work the
way they do with Claude Code.

Sessions live outside the workspace (under ``AICODEBOX_STATE_DIR``) so they never show up in the
workspace's file listing: ``sessions/<id>.json`` holds the messages (without the system prompt,
which is rebuilt each run) and ``latest/<hash of the workspace>`` names the session a workspace
used last. Writes are atomic (temp file + rename), so a crash never leaves a torn session.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SESSION_ID = re.compile(r"^[0-9a-f]{32}$")


@dataclass
class Session:
    id: str
    cwd: str
    messages: list[dict[str, Any]] = field(default_factory=list)


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


class SessionStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    @staticmethod
    def valid_id(session_id: str) -> bool:
        return bool(SESSION_ID.match(session_id))

    def _latest_file(self, cwd: Path) -> Path:
        return self.root / "latest" / hashlib.sha256(str(cwd).encode()).hexdigest()[:32]

    def new(self, cwd: Path) -> Session:
        return Session(id=uuid.uuid4().hex, cwd=str(cwd))

    def load(self, session_id: str) -> Session | None:
        if not self.valid_id(session_id):
            return None
        try:
            data = json.loads((self.root / "sessions" / f"{session_id}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return Session(id=data["id"], cwd=data["cwd"], messages=list(data["messages"]))

    def latest(self, cwd: Path) -> Session | None:
        """The session ``cwd`` used last, if any."""
        try:
            session_id = self._latest_file(cwd).read_text(encoding="utf-8").strip()
        except OSError:
            return None
        return self.load(session_id)

    def save(self, session: Session, cwd: Path) -> None:
        payload = {"id": session.id, "cwd": session.cwd, "updated": time.time(), "messages": session.messages}
        _write_atomic(self.root / "sessions" / f"{session.id}.json", json.dumps(payload, ensure_ascii=False))
        _write_atomic(self._latest_file(cwd), session.id)
