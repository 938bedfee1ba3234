"""The gateway's ways in: each route family the planes are reached by, one package each.

- ``mcp/``: ``/mcp``, the MCP server with the built-in tools and the upstream servers' tools;
- ``rest/``: ``/v1/*``, the AIO Sandbox compatible REST API (built on its first request);
- ``v2/``: ``/v2/*``, AIO's ``aiod`` surface, on the same planes and in the same app as ``rest/``;
- ``web/``: the pages a person opens (dashboard, manual, API docs, live view, terminal) and their files;
- ``relays/``: traffic passed on to something else in the sandbox: Chromium's DevTools (``/cdp/``)
  and the apps a person previews (``/proxy/``, ``/absproxy/``, preview hosts);
- ``shared/``: what more than one door builds its answers from (file fields, browser links, the
  gateway's address as a caller sees it).

A door parses its protocol, calls a plane and shapes the answer; who may come in is ``auth``'s."""
