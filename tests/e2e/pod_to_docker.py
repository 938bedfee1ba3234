"""docker-py arguments that run the agentbox image the way the kubelet runs a SandboxTemplate's pod: the same
user and groups, read-only root, dropped capabilities and no privilege escalation, the limits and requests,
the environment (Secret keys, downward-API fields and ``$(VAR)`` references resolved), every emptyDir as a
tmpfs of its size limit, each volumeClaimTemplate as a Docker volume, and the liveness probe as the
container's health check. Init containers run first, to completion, in the same way; an emptyDir they share
with the main container and a Secret volume become Docker volumes (tmpfs-backed), the Secret's files
written as the kubelet writes them (root-owned, group fsGroup, its defaultMode). Read from the manifest
itself, so the test and deploy/kubernetes/ cannot drift."""

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
class SharedVolume:
    """A pod volume two containers share: a Docker volume (a tmpfs one would be a new, empty tmpfs in each
    container), its root owned and moded as the kubelet makes it, with the Secret's files for a Secret."""

    docker_name: str
    owner: str
    mode: int
    #: path in the volume -> (content, mode); empty for an emptyDir.
    files: dict[str, tuple[str, int]]


@dataclass(frozen=True)
class PodLayout:
    """What ``client.containers.run(image, **run_args)`` needs, and what the kubelet's probes ask; the
    init containers' run arguments, in order, and the volumes to make before any of them."""

    run_args: dict[str, Any]
    ports: dict[str, int]
    #: The readiness probe's command (an exec probe), run as the pod's user.
    readiness: tuple[str, ...]
    init_args: tuple[dict[str, Any], ...] = ()
    shared_volumes: tuple[SharedVolume, ...] = ()


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
    pod_security = spec.get("securityContext", {})
    ports = {port["name"]: port["containerPort"] for port in box["ports"]}
    fields = {"metadata.name": name, "metadata.namespace": namespace, "status.podIP": pod_ip}
    inits = spec.get("initContainers", [])
    shared = _shared_volumes(spec, inits, name=name, secrets=secrets, labels=labels)
    volumes_by_name = {volume.docker_name.removeprefix(f"{name}-"): volume for volume in shared}

    def common(c: dict[str, Any], container_name: str) -> dict[str, Any]:
        security = c.get("securityContext", {})
        return {
            "name": container_name,
            "labels": dict(labels),
            "user": f"{pod_security['runAsUser']}:{pod_security.get('runAsGroup', pod_security['runAsUser'])}",
            "group_add": [str(pod_security["fsGroup"])] if "fsGroup" in pod_security else [],
            "read_only": security.get("readOnlyRootFilesystem", False),
            "privileged": security.get("privileged", False),
            "cap_drop": security.get("capabilities", {}).get("drop", []),
            "cap_add": security.get("capabilities", {}).get("add", []),
            "security_opt": ["no-new-privileges"] if security.get("allowPrivilegeEscalation") is False else [],
            "environment": _environment(c.get("env", []), secrets=secrets, fields=fields),
            **_resources(c["resources"]),
            **_mounts(c.get("volumeMounts", []), spec.get("volumes", []), claim_volumes, pod_security, volumes_by_name),
        }

    init_args = tuple(
        {
            **common(init, f"{name}-init-{init['name']}"),
            "entrypoint": init["command"],
            "command": init.get("args", []),
            "detach": True,
        }
        for init in inits
    )
    run_args: dict[str, Any] = {
        **common(box, name),
        "hostname": name,
        "detach": True,
        "ports": {f"{port}/tcp": ("127.0.0.1", None) for port in ports.values()},
        "healthcheck": _healthcheck(box["livenessProbe"], ports),
    }
    readiness = tuple(box["readinessProbe"]["exec"]["command"])
    return PodLayout(run_args, ports, readiness, init_args, shared)


def _shared_volumes(
    spec: Mapping[str, Any],
    inits: list[dict[str, Any]],
    *,
    name: str,
    secrets: Mapping[str, str],
    labels: Mapping[str, str],
) -> tuple[SharedVolume, ...]:
    """The volumes an init container mounts (an emptyDir it shares, a Secret) as Docker volumes."""
    pod_security = spec.get("securityContext", {})
    uid, gid = pod_security["runAsUser"], pod_security.get("fsGroup", pod_security["runAsUser"])
    used = {mount["name"] for init in inits for mount in init.get("volumeMounts", [])}
    shared = []
    for volume in spec.get("volumes", []):
        if volume["name"] not in used:
            continue
        if "secret" in volume:
            source = volume["secret"]
            files = {
                item["path"]: (secrets[item["key"]], item.get("mode", source.get("defaultMode", 0o644)))
                for item in source["items"]
            }
            shared.append(SharedVolume(f"{name}-{volume['name']}", f"0:{gid}", 0o750, files))
        else:
            shared.append(SharedVolume(f"{name}-{volume['name']}", f"{uid}:{gid}", 0o770, {}))
    return tuple(shared)


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
    shared: Mapping[str, SharedVolume],
) -> dict[str, Any]:
    """emptyDirs as empty tmpfs bounded by sizeLimit, executable and writable by the pod's user as an emptyDir
    is (Docker gives a tmpfs the mode of the image's directory, so the pod's uid and fsGroup own it instead),
    claims and shared volumes as Docker volumes (``readOnly`` kept); any other kind of volume is not a layout
    this translation knows, and fails."""
    owner = f"uid={pod_security['runAsUser']},gid={pod_security.get('fsGroup', pod_security['runAsUser'])}"
    by_name = {volume["name"]: volume for volume in volumes}
    tmpfs: dict[str, str] = {}
    bound: dict[str, dict[str, str]] = {}
    for mount in mounts:
        mode = "ro" if mount.get("readOnly") else "rw"
        volume = by_name.get(mount["name"])
        if volume is None:
            bound[claim_volumes[mount["name"]]] = {"bind": mount["mountPath"], "mode": mode}
        elif mount["name"] in shared:
            bound[shared[mount["name"]].docker_name] = {"bind": mount["mountPath"], "mode": mode}
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
