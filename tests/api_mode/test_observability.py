"""API mode's ``/metrics`` (issue 20): behind the API token (not the MCP one), runs through ``/run``
counted, requests labelled by route template."""

from __future__ import annotations

import httpx

from tests.support.metrics import scrape, value

from .helpers import serve_api

API_TOKEN = "obs-api-token-a07c"
TOKEN = "obs-mcp-token-5e1d"


def test_api_mode_metrics_behind_the_api_token(make_api_settings) -> None:
    settings = make_api_settings(
        AICODEBOX_API_MODE_TOKEN=API_TOKEN, AICODEBOX_MCP_MODE="1", AICODEBOX_MCP_MODE_TOKEN=TOKEN
    )
    with serve_api(settings) as base:
        assert httpx.get(f"{base}/metrics").status_code == 401
        assert httpx.get(f"{base}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 401
        before = scrape(base, Authorization=f"Bearer {API_TOKEN}")
        answer = httpx.post(
            f"{base}/run",
            json={"prompt": "ANSWER via run", "model": "sonnet"},
            headers={"Authorization": f"Bearer {API_TOKEN}"},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        after = scrape(base, Authorization=f"Bearer {API_TOKEN}")
    for event in ("started", "finished"):
        runs = value(after, "agentbox_agent_runs_total", event=event)
        assert runs - value(before, "agentbox_agent_runs_total", event=event) == 1
    assert value(after, "agentbox_http_requests_total", method="POST", route="/run", status="200") == 1
