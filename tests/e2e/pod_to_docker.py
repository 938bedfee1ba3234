"""docker-py arguments that run the agentbox image the way the kubelet runs a SandboxTemplate's pod: the same
user and groups, read-only root, dropped capabilities and no privilege escalation, the limits and requests,
the environment (Secret keys, downward-API fields and ``$(VAR)`` references resolved), every emptyDir as a
tmpfs of its size limit, each volumeClaimTemplate as a Docker volume, and the liveness probe as the
container's health check. Read from the manifest itself, so the test and deploy/kubernetes/ cannot drift."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes.utils import parse_quantity

from tests.support.kubernetes_manifests import container, pod_spec

_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
_SECOND = 1_000_000_000  # Docker's health-check durations are in nanoseconds


@dataclass(frozen=True)
class PodLayout:
    """What ``client.containers.run(image, **run_args)`` needs, and what the kubelet's probes ask."""

    run_args: dict[str, Any]
    ports: dict[str, int]
    readiness: tuple[int, str]


def pod_layout(
    sandbox_template: dict[str, Any],
    *,
    name: str,
    namespace: str,
    pod_ip: str,
    secrets: Mapping[str, str],
    claim_volumes: Mapping[str, str],
    labels: Mapping[str, str],
) -> PodLayout:
    """The docker run of ``sandbox_template``'s pod named ``name`` (``pod_ip`` is what the downward API would
    say; Docker assigns the real address later); ``claim_volumes`` maps each volumeClaimTemplate to the
    Docker volume standing in for its PVC."""
    spec = pod_spec(sandbox_template)
    box = container(sandbox_template)
    pod_security, security = spec.get("securityContext", {}), box.get("securityContext", {})
    ports = {port["name"]: port["containerPort"] for port in box["ports"]}
    run_args: dict[str, Any] = {
        "name": name,
        "hostname": name,
        "detach": True,
        "labels": dict(labels),
        "user": f"{pod_security['runAsUser']}:{pod_security.get('runAsGroup', pod_security['runAsUser'])}",
        "group_add": [str(pod_security["fsGroup"])] if "fsGroup" in pod_security else [],
        "read_only": security.get("readOnlyRootFilesystem", False),
        "privileged": security.get("privileged", False),
        "cap_drop": security.get("capabilities", {}).get("drop", []),
        "cap_add": security.get("capabilities", {}).get("add", []),
        "security_opt": ["no-new-privileges"] if security.get("allowPrivilegeEscalation") is False else [],
        "environment": _environment(
            box.get("env", []),
            secrets=secrets,
            fields={"metadata.name": name, "metadata.namespace": namespace, "status.podIP": pod_ip},
        ),
        "ports": {f"{port}/tcp": ("127.0.0.1", None) for port in ports.values()},
        "healthcheck": _healthcheck(box["livenessProbe"], ports),
        **_resources(box["resources"]),
        **_mounts(box.get("volumeMounts", []), spec.get("volumes", []), claim_volumes, pod_security),
    }
    readiness = box["readinessProbe"]["httpGet"]
    return PodLayout(run_args, ports, (_port(readiness["port"], ports), readiness["path"]))


def _port(port: int | str, ports: Mapping[str, int]) -> int:
    return ports[port] if isinstance(port, str) else port


def _environment(env: list[dict[str, Any]], *, secrets: Mapping[str, str], fields: Mapping[str, str]) -> dict[str, str]:
    """The container's environment as the kubelet builds it: in order, each ``$(VAR)`` replaced by an
    earlier variable (left as written when there is none), an optional Secret key that is absent left out,
    a downward-API field by its path."""
    resolved: dict[str, str] = {}
    for var in env:
        source = var.get("valueFrom")
        if source is None:
            resolved[var["name"]] = _REFERENCE.sub(lambda m: resolved.get(m[1], m[0]), var.get("value", ""))
        elif "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            if ref["key"] in secrets:
                resolved[var["name"]] = secrets[ref["key"]]
            elif not ref.get("optional"):
                raise KeyError(f"the Secret has no key {ref['key']} (the pod would not start)")
        else:
            resolved[var["name"]] = fields[source["fieldRef"]["fieldPath"]]
    return resolved


def _resources(resources: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    """Limits as cgroup limits (no swap, as on a kubelet), requests as a reservation and CPU weight."""
    limits, requests = resources.get("limits", {}), resources.get("requests", {})
    memory = int(parse_quantity(limits["memory"]))
    return {
        "mem_limit": memory,
        "memswap_limit": memory,
        "nano_cpus": int(parse_quantity(limits["cpu"]) * _SECOND),
        "mem_reservation": int(parse_quantity(requests["memory"])),
        "cpu_shares": max(2, int(parse_quantity(requests["cpu"]) * 1024)),
    }


def _mounts(
    mounts: list[dict[str, Any]],
    volumes: list[dict[str, Any]],
    claim_volumes: Mapping[str, str],
    pod_security: Mapping[str, Any],
) -> dict[str, Any]:
    """emptyDirs as empty tmpfs bounded by sizeLimit, executable and writable by the pod's user as an emptyDir
    is (Docker gives a tmpfs the mode of the image's directory, so the pod's uid and fsGroup own it instead),
    claims as Docker volumes; any other kind of volume is not a layout this translation knows, and fails."""
    owner = f"uid={pod_security['runAsUser']},gid={pod_security.get('fsGroup', pod_security['runAsUser'])}"
    by_name = {volume["name"]: volume for volume in volumes}
    tmpfs: dict[str, str] = {}
    bound: dict[str, dict[str, str]] = {}
    for mount in mounts:
        volume = by_name.get(mount["name"])
        if volume is None:
            bound[claim_volumes[mount["name"]]] = {"bind": mount["mountPath"], "mode": "rw"}
        else:
            size = int(parse_quantity(volume["emptyDir"]["sizeLimit"]))
            tmpfs[mount["mountPath"]] = f"size={size},{owner},exec"
    return {"tmpfs": tmpfs, "volumes": bound}


def _healthcheck(probe: Mapping[str, Any], ports: Mapping[str, int]) -> dict[str, Any]:
    get = probe["httpGet"]
    timeout = probe.get("timeoutSeconds", 1)
    url = f"http://127.0.0.1:{_port(get['port'], ports)}{get['path']}"
    return {
        "test": ["CMD", "curl", "-fsS", "--max-time", str(timeout), url],
        "interval": probe.get("periodSeconds", 10) * _SECOND,
        "timeout": timeout * _SECOND,
        "retries": probe.get("failureThreshold", 3),
        "start_period": probe.get("initialDelaySeconds", 0) * _SECOND,
    }
