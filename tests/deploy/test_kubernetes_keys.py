"""deploy/kubernetes/ gives every sandbox its own keys, and the sandbox none: the keys init container
derives each pod's keys from the pool secret and its name and leaves only their digests; the claimant's
``sandbox-keys`` prints the same keys. The rendered kustomization keeps the sandboxes' egress off every
reserved range, the cluster's own included."""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentbox_common.keys import digest_of
from tests.support.kubernetes_manifests import DEPLOY, TEMPLATES, container, init_container, pod_spec, template

POOL_SECRET = "p" * 64


def derive_digests(tmp_path: Path, name: str, pod: str, secret: str = POOL_SECRET) -> dict[str, str]:
    """What the template's keys init container writes for pod ``pod``: its own script, run here with
    its mount paths moved under ``tmp_path``."""
    keys = init_container(template(name))
    script = keys["args"][0]
    root = tmp_path / pod
    for mount in keys["volumeMounts"]:
        moved = root / mount["mountPath"].lstrip("/")
        moved.mkdir(parents=True)
        script = script.replace(mount["mountPath"], str(moved))
    (root / "run/agentbox-pool/pool-secret").write_text(secret)
    assert keys["command"][0] == "python3"
    subprocess.run(
        [sys.executable, *keys["command"][1:], script], env={"POD_NAME": pod}, check=True, capture_output=True
    )
    out = root / "run/agentbox-keys"
    return {path.name: path.read_text().strip() for path in out.iterdir()}


def sandbox_keys(pod: str, secret: str = POOL_SECRET) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, str(DEPLOY / "sandbox-keys"), pod],
        env={**os.environ, "AGENTBOX_POOL_SECRET": secret},
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(line.split("=", 1) for line in done.stdout.splitlines())


@pytest.mark.parametrize("name", TEMPLATES)
def test_each_pod_gets_its_own_keys_and_holds_only_their_digests(tmp_path: Path, name: str) -> None:
    first, second = derive_digests(tmp_path, name, "agentbox-x7k2p"), derive_digests(tmp_path, name, "agentbox-q4m9z")
    assert set(first) == {"gateway", "mcp-mode"}
    assert first["gateway"] != second["gateway"] and first["mcp-mode"] != second["mcp-mode"]
    for pod, digests in (("agentbox-x7k2p", first), ("agentbox-q4m9z", second)):
        keys = sandbox_keys(pod)
        assert digests == {
            "gateway": digest_of(keys["AIO_API_KEY"]),
            "mcp-mode": digest_of(keys["AICODEBOX_MCP_MODE_TOKEN"]),
        }
        assert keys["AIO_API_KEY"] not in str(digests) and POOL_SECRET not in str(digests)
    assert sandbox_keys("agentbox-x7k2p", "s" * 64) != sandbox_keys("agentbox-x7k2p")


def test_a_short_pool_secret_stops_the_pod(tmp_path: Path) -> None:
    with pytest.raises(subprocess.CalledProcessError) as failed:
        derive_digests(tmp_path, "agentbox", "agentbox-x7k2p", secret="short")
    assert b"at least 32 characters" in failed.value.stderr


@pytest.mark.parametrize("name", TEMPLATES)
def test_no_key_reaches_the_agentbox_container(name: str) -> None:
    box = container(template(name))
    env = {e["name"]: e for e in box["env"]}
    assert "AIO_API_KEY" not in env and "AICODEBOX_MCP_MODE_TOKEN" not in env
    assert env["AIO_API_KEY_FILE"]["value"] == "/run/agentbox-keys/gateway"
    assert env["AICODEBOX_MCP_MODE_TOKEN_FILE"]["value"] == "/run/agentbox-keys/mcp-mode"
    secret_volumes = {v["name"] for v in pod_spec(template(name))["volumes"] if "secret" in v}
    assert secret_volumes == {"pool-secret"}
    assert not {m["name"] for m in box["volumeMounts"]} & secret_volumes
    assert {m["name"] for m in init_container(template(name))["volumeMounts"]} == {"pool-secret", "keys"}
    assert init_container(template(name))["securityContext"] == box["securityContext"]


def rendered(tmp_path: Path) -> list[dict[str, Any]]:
    """``kubectl kustomize`` of deploy/kubernetes/ with a filled-in secrets.env."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    folder = tmp_path / "kubernetes"
    shutil.copytree(DEPLOY, folder)
    (folder / "secrets.env").write_text(f"AGENTBOX_POOL_SECRET={POOL_SECRET}\nANTHROPIC_API_KEY=\nOPENAI_API_KEY=\n")
    done = subprocess.run([kubectl, "kustomize", str(folder)], check=True, capture_output=True, text=True)
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


REACHABLE_ONLY_IF_PUBLIC = ["1.1.1.1", "8.8.8.8", "2606:4700:4700::1111"]
NEVER_REACHABLE = [
    "169.254.169.254",  # cloud metadata
    "100.100.100.200",  # Alibaba's metadata
    "fd00:ec2::254",  # AWS's IPv6 metadata
    "fd12:3456::1",  # unique local (fd00::/8)
    "fe80::1",
    "127.0.0.1",
    "0.0.0.0",
    "::1",
    "::ffff:10.0.0.1",  # IPv4-mapped private address
    "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
    "224.0.0.251",
    "255.255.255.255",
    "10.244.3.17",  # the cluster's pods (cluster-ranges.yaml)
    "10.96.0.1",  # its Services
    "192.168.1.1",
    "172.16.0.1",
]


def test_the_rendered_egress_is_public_addresses_only(tmp_path: Path) -> None:
    objects = rendered(tmp_path)
    assert sorted(f"{d['kind']}/{d['metadata']['name']}" for d in objects) == [
        "NetworkPolicy/agentbox-sandboxes",
        "SandboxTemplate/agentbox",
        "SandboxTemplate/agentbox-code",
        "SandboxWarmPool/agentbox",
        "SandboxWarmPool/agentbox-code",
        "Secret/agentbox-secrets",
    ]
    (policy,) = [d for d in objects if d["kind"] == "NetworkPolicy"]
    blocks = [peer["ipBlock"] for rule in policy["spec"]["egress"] for peer in rule["to"] if "ipBlock" in peer]

    def allowed(address: str) -> bool:
        ip = ipaddress.ip_address(address)
        return any(
            ip in ipaddress.ip_network(block["cidr"])
            and not any(ip in ipaddress.ip_network(cidr) for cidr in block.get("except", []))
            for block in blocks
            if ipaddress.ip_network(block["cidr"]).version == ip.version
        )

    assert [a for a in REACHABLE_ONLY_IF_PUBLIC if not allowed(a)] == []
    assert [a for a in NEVER_REACHABLE if allowed(a)] == []
    v4_excepts = next(b["except"] for b in blocks if b["cidr"] == "0.0.0.0/0")
    assert {"10.244.0.0/16", "10.96.0.0/12"} <= set(v4_excepts)  # the cluster's ranges, from the patch
