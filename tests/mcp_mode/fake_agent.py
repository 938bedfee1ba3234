"""Stand-in for the Claude Code and Codex CLIs (copied into a temp dir and made executable by the
tests). It records its argv, stdin, cwd and environment in ``calls.jsonl`` next to itself, then
prints the CLI's documented output: Claude Code's stream-json NDJSON, or Codex's ``exec --json``
JSONL when its first argument is ``exec``. Behaviour is driven by lines of the prompt:

    FIRST <text>         claude: write this part of the answer before the SLEEP (streamed progress)
    SLEEP <seconds>      wait before answering
    CHILD                start a grandchild (``sleep 60``) in the same process group first
    EXIT <code>          print an error on stderr and exit with that code, no result
    ANSWER <text>        the final answer (default: ``echo: <first prompt line>``)
    RETRY_ANSWER <text>  the answer when the prompt is a json_schema retry prompt
    ERROR_RESULT         claude: a result event with is_error true (exit 1)
"""

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

prompt = sys.stdin.read()
argv = sys.argv[1:]
directives: dict[str, str] = {}
for line in prompt.splitlines():
    word, _, rest = line.strip().partition(" ")
    if word.isupper() and word not in directives:
        directives[word] = rest

record = {
    "argv": argv,
    "stdin": prompt,
    "cwd": os.getcwd(),
    "pid": os.getpid(),
    "pgid": os.getpgid(0),
    "secrets_seen": sorted(
        k
        for k in ("AICODEBOX_MCP_MODE_TOKEN", "AICODEBOX_API_MODE_TOKEN", "AICODEBOX_TELEGRAM_MODE_TOKEN")
        if k in os.environ
    ),
}
try:  # the service that started this run must not let it read the service's own environment
    record["parent_environ_readable"] = bool(Path(f"/proc/{os.getppid()}/environ").read_bytes())
except OSError:
    record["parent_environ_readable"] = False
if "--output-schema" in argv:
    record["output_schema"] = json.loads(Path(argv[argv.index("--output-schema") + 1]).read_text())
if "CHILD" in directives:
    record["child"] = subprocess.Popen(["sleep", "60"]).pid
with open(Path(__file__).with_name("calls.jsonl"), "a", encoding="utf-8") as log:
    log.write(json.dumps(record) + "\n")

if "FIRST" in directives and argv[:1] != ["exec"]:
    print(
        json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": directives["FIRST"]}]}}),
        flush=True,
    )
if "SLEEP" in directives:
    time.sleep(float(directives["SLEEP"]))
if "EXIT" in directives:
    print("stand-in agent failed on purpose", file=sys.stderr)
    sys.exit(int(directives["EXIT"]))

if "could not be parsed as JSON" in prompt and "RETRY_ANSWER" in directives:
    answer = directives["RETRY_ANSWER"]
else:
    answer = directives.get("ANSWER", "echo: " + (prompt.splitlines() or [""])[0])
answer = answer.replace("\\n", "\n")


def emit(event: dict) -> None:
    print(json.dumps(event), flush=True)


if argv[:1] == ["exec"]:
    thread = (
        argv[argv.index("resume") + 1]
        if "resume" in argv and argv[argv.index("resume") + 1] != "--last"
        else ("last-thread" if "--last" in argv else uuid.uuid4().hex)
    )
    emit({"type": "thread.started", "thread_id": thread})
    emit({"type": "turn.started"})
    emit({"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "thinking"}})
    emit({"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": answer}})
    emit(
        {
            "type": "turn.completed",
            "usage": {"input_tokens": 11, "cached_input_tokens": 0, "output_tokens": 7},
        }
    )
else:
    session = (
        argv[argv.index("--resume") + 1]
        if "--resume" in argv
        else ("continued-session" if "--continue" in argv else str(uuid.uuid4()))
    )
    emit({"type": "system", "subtype": "init", "session_id": session, "model": "stand-in", "tools": []})
    emit(
        {
            "type": "assistant",
            "message": {"content": [{"type": "text", "text": answer}]},
            "session_id": session,
        }
    )
    is_error = "ERROR_RESULT" in directives
    emit(
        {
            "type": "result",
            "subtype": "error_during_execution" if is_error else "success",
            "is_error": is_error,
            "result": answer,
            "session_id": session,
            "num_turns": 1,
            "usage": {"input_tokens": 11, "output_tokens": 7},
        }
    )
    if is_error:
        sys.exit(1)
