"""Reading deploy/kubernetes/ the way the cluster will: its YAML documents, the pod inside a SandboxTemplate,
the Secret kustomize generates, and strict checks of core objects against the Kubernetes API types (the
official ``kubernetes`` client's models)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client import ApiClient

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"
#: The SandboxTemplates and their files: with the browser, and code-only (DISABLE_BROWSER=true).
TEMPLATE_FILES = {"agentbox": "template-browser.yaml", "agentbox-code": "template-code.yaml"}
TEMPLATES = tuple(TEMPLATE_FILES)

_API = ApiClient()


def documents(name: str) -> list[dict[str, Any]]:
    """The YAML documents of one file of deploy/kubernetes/."""
    with open(DEPLOY / name, encoding="utf-8") as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc is not None]


def kustomization() -> dict[str, Any]:
    return documents("kustomization.yaml")[0]


def patch_files() -> list[str]:
    """The kustomization's patches (JSON patches of a manifest, not objects)."""
    return [patch["path"] for patch in kustomization().get("patches", [])]


def manifest_files() -> list[str]:
    """Every manifest file of the folder (kustomization.yaml and its patches aside)."""
    skipped = {"kustomization.yaml", *patch_files()}
    return sorted(p.name for p in DEPLOY.glob("*.yaml") if p.name not in skipped)


def all_objects() -> list[dict[str, Any]]:
    return [doc for name in manifest_files() for doc in documents(name)]


def find(kind: str, name: str) -> dict[str, Any]:
    matches = [doc for doc in all_objects() if doc["kind"] == kind and doc["metadata"]["name"] == name]
    assert len(matches) == 1, f"{kind}/{name}: {len(matches)} found in {DEPLOY}"
    return matches[0]


def template(name: str = "agentbox") -> dict[str, Any]:
    return find("SandboxTemplate", name)


def pod_spec(sandbox_template: dict[str, Any]) -> dict[str, Any]:
    return sandbox_template["spec"]["podTemplate"]["spec"]


def container(sandbox_template: dict[str, Any]) -> dict[str, Any]:
    """The template's one container (agentbox is a single-container pod)."""
    (only,) = pod_spec(sandbox_template)["containers"]
    return only


def init_container(sandbox_template: dict[str, Any], name: str = "keys") -> dict[str, Any]:
    (found,) = [c for c in pod_spec(sandbox_template).get("initContainers", []) if c["name"] == name]
    return found


def env_file(name: str) -> dict[str, str]:
    """``KEY=value`` lines as kustomize's secretGenerator reads them (comments and blank lines skipped)."""
    pairs: dict[str, str] = {}
    for line in (DEPLOY / name).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            pairs[key.strip()] = value
    return pairs


def generated_secret(values: dict[str, str]) -> dict[str, Any]:
    """The Secret the kustomization's secretGenerator makes from an env file with ``values``."""
    (generator,) = kustomization()["secretGenerator"]
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": generator["name"]},
        "type": "Opaque",
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in values.items()},
    }


def as_api_type(body: dict[str, Any], type_name: str) -> Any:
    """``body`` as the client's model ``type_name`` (e.g. V1PodSpec); raises on a missing required field."""
    return _API.deserialize(json.dumps(body), type_name, "application/json")


def unknown_fields(body: Any, type_name: str) -> list[str]:
    """Paths in ``body`` the API type does not have (or holds in another shape): a model drops what it does not
    know, so whatever does not survive the round trip is a typo or a field of another type."""
    model = as_api_type(body, type_name)
    return _differences(body, _API.sanitize_for_serialization(model), "")


def _differences(given: Any, kept: Any, path: str) -> list[str]:
    if isinstance(given, dict) and isinstance(kept, dict):
        found = []
        for key, value in given.items():
            if key not in kept:
                found.append(f"{path}.{key}")
            else:
                found.extend(_differences(value, kept[key], f"{path}.{key}"))
        return found
    if isinstance(given, list) and isinstance(kept, list) and len(given) == len(kept):
        pairs = enumerate(zip(given, kept, strict=True))
        return [diff for i, (a, b) in pairs for diff in _differences(a, b, f"{path}[{i}]")]
    return [] if given == kept else [f"{path} ({given!r} became {kept!r})"]
