"""A tiny stateless MCP server (official ``mcp`` SDK) that a child image adds next to agentbox's
programs. The gateway registers it through EXTRA_MCP_SERVERS with the prefix ``hello``, so its tools are
published as ``hello_greet`` and ``hello_word_count``. It listens on loopback only: the gateway is its
one client."""

from __future__ import annotations

import os

from mcp.server import MCPServer

server = MCPServer("hello", instructions="Greets people and counts words; an agentbox child-image example.")


@server.tool()
def greet(name: str) -> str:
    """Greet someone by name."""
    return f"Hello, {name}! (from the hello MCP server)"


@server.tool()
def word_count(text: str) -> dict[str, int]:
    """Count the words and characters of a text."""
    return {"words": len(text.split()), "characters": len(text)}


def main() -> None:
    server.run(
        "streamable-http",
        host="127.0.0.1",
        port=int(os.environ.get("HELLO_MCP_PORT", "8200")),
        stateless_http=True,
        json_response=True,
    )


if __name__ == "__main__":
    main()
