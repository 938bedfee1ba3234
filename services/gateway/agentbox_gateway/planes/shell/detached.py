"""Apps that outlive shell sessions (``detach``): a dev server or any long-running program an agent
wants to keep after its sessions are closed or cleaned up.

A session owns everything its shell started: the shell is a child subreaper, so its descendants stay
below it whatever ``setsid``/``nohup``/double fork they use, and closing the session (or cleaning all
sessions up, or the gateway's shutdown) kills them (:mod:`.processes`). A detached app is started by
the gateway itself, not by a shell, in a kernel session and process group of its own, so it is in no
session's kill set: it runs until it exits, is killed by pid, or the sandbox stops (a gateway restart
leaves it running). Its stdin is ``/dev/null`` and its output goes to a log file of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from agentbox_common.processes import sandbox_environment

from .errors import InvalidRequest, ShellUnavailable


@dataclass(frozen=True)
class DetachedApp:
    """A started detached app: its pid (also its process group and kernel session), where it runs
    and where its output goes."""

    pid: int
    command: str
    cwd: str
    log_file: str


def log_dir() -> Path:
    """Where detached apps' logs go: in the sandbox user's home, not a shared temporary directory."""
    return Path.home() / ".cache" / "agentbox" / "apps"


def start_detached(command: str, cwd: str) -> DetachedApp:
    """Start ``command`` (bash syntax) in ``cwd`` outside every session; blocking (fork and exec)."""
    if not command.strip():
        raise InvalidRequest("command must not be empty")
    bash = shutil.which("bash")
    if bash is None:
        raise ShellUnavailable("bash is not installed in this sandbox")
    directory = log_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    env = sandbox_environment()
    env.pop("OLDPWD", None)
    env["PWD"] = cwd
    env.setdefault("PYTHONUNBUFFERED", "1")  # output reaches the log as it is printed
    pending = directory / f"starting-{os.getpid()}-{threading.get_ident()}.log"
    with open(pending, "wb") as log:
        try:
            process = subprocess.Popen(
                [bash, "--noprofile", "--norc", "-c", command],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            pending.unlink(missing_ok=True)
            raise ShellUnavailable(f"cannot start bash: {exc}") from exc
    log_file = directory / f"{process.pid}.log"
    os.replace(pending, log_file)
    # The gateway is its parent until it exits: reap it then, so no zombie is left behind.
    threading.Thread(target=process.wait, name=f"detached-{process.pid}", daemon=True).start()
    return DetachedApp(process.pid, command, cwd, str(log_file))
