"""The browser program's ``tools/list``, written once at the image's build:

    python -m agentbox_browser.catalogue /opt/agentbox/share/browser-tools.json

The gateway serves it (``AGENTBOX_BROWSER_TOOLS``) while the program starts, or before it is started
with ``BROWSER_START_MODE=manual``, so that a client's first ``tools/list`` already holds the page
tools. It is the tools' own definitions, dumped as the SDK sends them, not a copy kept by hand."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .tools import browser_tools


def tools_catalogue() -> list[dict[str, Any]]:
    """Each tool as ``tools/list`` carries it."""
    return [tool.to_tool().model_dump(by_alias=True, mode="json", exclude_none=True) for tool in browser_tools()]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m agentbox_browser.catalogue PATH", file=sys.stderr)
        return 2
    target = Path(args[0])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(tools_catalogue(), separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
