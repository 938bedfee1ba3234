"""deploy/reverse-proxy: nginx in front of agentbox. MCP mode answers 421 to the proxy's public host until
AICODEBOX_MCP_MODE_ALLOWED_HOSTS names it, then 200; the key-less gateway likewise until AIO_ALLOWED_HOSTS
names it (its DNS-rebinding guard), then it is served through the same proxy.

nginx runs in its own container sharing the agentbox container's network namespace (so it reaches
agentbox on 127.0.0.1, AGENTBOX_UPSTREAM_HOST), and only 127.0.0.1-published ports are used."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
from collections.abc import Iterator

import docker
import httpx
import pytest
from websockets.sync.client import connect

from .conftest import MCP_TOKEN
from .dockerbox import LABEL, REPO, Box, build_on, mcp_payload, mcp_post, running_box, unique

pytestmark = pytest.mark.docker

PUBLIC_HOST = "agent.example.test"
PUBLISHED = (8091, 8080, 8081, 80)
#: MCP mode's own probe, through the proxy (it is public: no Host or token check).
MCP_MODE_PROBE = ("/agent/healthz",)


@pytest.fixture(scope="module")
def proxy_image(docker_client: docker.DockerClient, base_image: str) -> str:
    return build_on(docker_client, base_image, folder=REPO / "deploy/reverse-proxy", tag="agentbox-proxy:e2e")


@contextlib.contextmanager
def start_proxy(
    docker_client: docker.DockerClient, proxy_image: str, box: Box, health: int = 200, also: tuple[str, ...] = ()
) -> Iterator[None]:
    """nginx in front of ``box``, ready once the gateway's ``/health`` answers ``health`` through it
    and each path in ``also`` (another program's probe: each starts on its own) answers 200."""
    proxy = docker_client.containers.run(
        proxy_image,
        detach=True,
        name=unique("agentbox-e2e-proxy"),
        labels={LABEL: "1"},
        network_mode=f"container:{box.container.id}",
        environment={"PUBLIC_HOST": PUBLIC_HOST, "AGENTBOX_UPSTREAM_HOST": "127.0.0.1"},
    )
    try:
        box.wait_http(80, "/health", expect=health, headers={"Host": PUBLIC_HOST}, timeout=60)
        for path in also:
            box.wait_http(80, path, headers={"Host": PUBLIC_HOST}, timeout=60)
        yield
    finally:
        proxy.remove(force=True)


def proxied_tools_list(box: Box) -> httpx.Response:
    return mcp_post(
        box.url(80, "/agent/"), "tools/list", headers={"Host": PUBLIC_HOST, "Authorization": f"Bearer {MCP_TOKEN}"}
    )


def test_mcp_mode_behind_the_proxy_needs_the_public_host_allowed(
    docker_client: docker.DockerClient, agentbox_image: str, proxy_image: str
) -> None:
    env = {"AICODEBOX_MCP_MODE": "1", "AICODEBOX_MCP_MODE_TOKEN": MCP_TOKEN, "DISABLE_BROWSER": "true"}
    with running_box(docker_client, agentbox_image, env, published=PUBLISHED) as box:
        with start_proxy(docker_client, proxy_image, box, health=421, also=MCP_MODE_PROBE):
            assert proxied_tools_list(box).status_code == 421
            refused = mcp_post(box.url(80, "/mcp"), "tools/list", headers={"Host": PUBLIC_HOST})
            assert refused.status_code == 421 and "AIO_ALLOWED_HOSTS" in refused.json()["error"]["message"]

    allowed = {
        **env,
        "AICODEBOX_MCP_MODE_ALLOWED_HOSTS": PUBLIC_HOST,
        "AICODEBOX_MCP_MODE_ALLOWED_ORIGINS": f"https://{PUBLIC_HOST}",
        "AIO_ALLOWED_HOSTS": PUBLIC_HOST,
    }
    with running_box(docker_client, agentbox_image, allowed, published=PUBLISHED) as box:
        with start_proxy(docker_client, proxy_image, box, also=MCP_MODE_PROBE):
            response = proxied_tools_list(box)
            assert response.status_code == 200, response.text
            assert "run_prompt" in {tool["name"] for tool in mcp_payload(response)["result"]["tools"]}
            also_mcp_path = mcp_post(
                box.url(80, "/agent/mcp"),
                "tools/list",
                headers={"Host": PUBLIC_HOST, "Authorization": f"Bearer {MCP_TOKEN}"},
            )
            assert also_mcp_path.status_code == 200
            browser_origin = mcp_post(
                box.url(80, "/agent/"),
                "tools/list",
                headers={
                    "Host": PUBLIC_HOST,
                    "Origin": f"https://{PUBLIC_HOST}",
                    "Authorization": f"Bearer {MCP_TOKEN}",
                },
            )
            assert browser_origin.status_code == 200
            foreign_origin = mcp_post(
                box.url(80, "/agent/"),
                "tools/list",
                headers={"Host": PUBLIC_HOST, "Origin": "https://evil.example", "Authorization": f"Bearer {MCP_TOKEN}"},
            )
            assert foreign_origin.status_code == 403
            gateway = mcp_post(box.url(80, "/mcp"), "tools/list", headers={"Host": PUBLIC_HOST})
            assert gateway.status_code == 200
            assert "sandbox_execute_bash" in {tool["name"] for tool in gateway.json()["result"]["tools"]}


def test_the_proxy_sets_forwarded_headers(
    docker_client: docker.DockerClient, agentbox_image: str, proxy_image: str
) -> None:
    """A command in the sandbox plays the upstream and prints the headers nginx sends it."""
    with running_box(docker_client, agentbox_image, {"DISABLE_BROWSER": "true"}, published=PUBLISHED) as box:
        box.exec("supervisorctl stop gateway")
        box.exec(
            "(setsid nohup python3 -c '"
            "import http.server\n"
            "class H(http.server.BaseHTTPRequestHandler):\n"
            "    def do_GET(self):\n"
            "        body = str(self.headers).encode()\n"
            '        self.send_response(200); self.send_header("Content-Length", str(len(body)))\n'
            "        self.end_headers(); self.wfile.write(body)\n"
            'http.server.HTTPServer(("127.0.0.1", 8091), H).serve_forever()\' >/dev/null 2>&1 &)',
            user="sandbox",
        )
        with start_proxy(docker_client, proxy_image, box):
            echoed = httpx.get(box.url(80, "/echo"), headers={"Host": PUBLIC_HOST}, timeout=10).text.lower()
            assert f"host: {PUBLIC_HOST}" in echoed
            assert f"x-forwarded-host: {PUBLIC_HOST}" in echoed
            assert "x-forwarded-proto: http" in echoed
            assert "x-forwarded-for: " in echoed and "x-real-ip: " in echoed


def test_previews_work_behind_the_proxy(
    docker_client: docker.DockerClient, agentbox_image: str, proxy_image: str
) -> None:
    """An app in the sandbox opened through nginx at /proxy/{port}/: forwarded headers reach it, its
    WebSocket is upgraded, and sandbox_get_context names the public preview URL."""
    app = base64.b64encode((REPO / "tests/support/preview_app.py").read_bytes()).decode()
    # A key-less gateway behind a proxy must be told the public name (DNS-rebinding protection).
    env = {"DISABLE_BROWSER": "true", "AIO_ALLOWED_HOSTS": PUBLIC_HOST}
    with running_box(docker_client, agentbox_image, env, published=PUBLISHED) as box:
        box.exec(f"echo {app} | base64 -d > /tmp/preview_app.py", user="sandbox")
        box.exec(
            "(setsid nohup python3 /tmp/preview_app.py --port 8770 >/dev/null 2>&1 &); "
            "for i in $(seq 100); do curl -fs -o /dev/null http://127.0.0.1:8770/ready && break; sleep 0.1; done",
            user="sandbox",
        )
        with start_proxy(docker_client, proxy_image, box):
            public = {"Host": PUBLIC_HOST}
            echoed = httpx.get(box.url(80, "/proxy/8770/page?x=1"), headers=public, timeout=10).json()
            headers = dict(echoed["headers"])
            assert echoed["path"] == "/page" and echoed["query"] == "x=1"
            assert headers["x-forwarded-host"] == PUBLIC_HOST and headers["x-forwarded-prefix"] == "/proxy/8770"
            redirect = httpx.get(box.url(80, "/proxy/8770/redirect"), headers=public, timeout=10)
            assert redirect.headers["location"] == "/proxy/8770/landing?from=redirect"
            nginx = socket.create_connection(("127.0.0.1", box.ports[80]), timeout=10)  # Host: the public name
            ws_url = f"ws://{PUBLIC_HOST}/proxy/8770/ws"
            with connect(ws_url, sock=nginx, subprotocols=["hmr"], open_timeout=10) as socket_:
                assert socket_.subprotocol == "hmr"
                socket_.send("ping")
                assert socket_.recv(timeout=10) == "ping"
            context = mcp_post(
                box.url(80, "/mcp"), "tools/call", {"name": "sandbox_get_context", "arguments": {}}, headers=public
            )
            info = json.loads(mcp_payload(context)["result"]["content"][0]["text"])
            assert f"http://{PUBLIC_HOST}/proxy/8770/" in [entry["url"] for entry in info["previews"]]
