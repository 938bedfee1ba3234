"""``AICODEBOX_MCP_MODE_TOKEN_FILE``: MCP mode's token read from a file, as the token or its digest."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from agentbox_common.keys import digest_of
from agentbox_common.settings import ConfigError
from agentbox_mcp_mode.settings import McpModeSettings
from tests.mcp_mode.helpers import serve_settings

TOKEN = "t" * 40
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.mark.parametrize("content", [TOKEN, digest_of(TOKEN)], ids=["token", "digest"])
def test_the_token_file_guards_mcp_mode(
    make_settings: Callable[..., McpModeSettings], tmp_path: Path, content: str
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(content + "\n")
    settings = make_settings(AICODEBOX_MCP_MODE_TOKEN_FILE=str(token_file))
    with serve_settings(settings) as base:
        assert httpx.post(f"{base}/mcp", json=LIST, headers=HEADERS).status_code == 401
        refused = httpx.post(f"{base}/mcp", json=LIST, headers={**HEADERS, "Authorization": f"Bearer {content}x"})
        assert refused.status_code == 401
        answered = httpx.post(f"{base}/mcp", json=LIST, headers={**HEADERS, "Authorization": f"Bearer {TOKEN}"})
        assert answered.status_code == 200


def test_the_token_and_a_token_file_together_are_refused(
    make_settings: Callable[..., McpModeSettings], tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    with pytest.raises(ConfigError, match="not both"):
        make_settings(AICODEBOX_MCP_MODE_TOKEN_FILE=str(token_file), AICODEBOX_MCP_MODE_TOKEN=TOKEN)
