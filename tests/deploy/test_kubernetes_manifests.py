"""deploy/kubernetes/ parses and validates: the agent-sandbox objects against the CRDs' schemas (see
tests/support/agent_sandbox_schema.py), every core object and the pod inside each SandboxTemplate against the
Kubernetes API types, and the names that tie the objects together resolve."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest

from tests.support.agent_sandbox_schema import SCHEMAS
from tests.support.kubernetes_manifests import (
    DEPLOY,
    TEMPLATE_FILES,
    TEMPLATES,
    all_objects,
    container,
    env_file,
    find,
    generated_secret,
    kustomization,
    manifest_files,
    pod_spec,
    template,
    unknown_fields,
)

CORE_TYPES = {"Service": "V1Service", "NetworkPolicy": "V1NetworkPolicy", "Secret": "V1Secret"}


def schema_errors(doc: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(SCHEMAS[doc["kind"]], format_checker=jsonschema.FormatChecker())
    return [f"{'.'.join(map(str, error.path))}: {error.message}" for error in validator.iter_errors(doc)]


def template_errors(doc: dict[str, Any]) -> list[str]:
    """A SandboxTemplate against its CRD schema, and the Kubernetes types it embeds against those types."""
    errors = schema_errors(doc) + unknown_fields(doc["metadata"], "V1ObjectMeta")
    errors += unknown_fields(pod_spec(doc), "V1PodSpec")
    for claim_template in doc["spec"].get("volumeClaimTemplates", []):
        errors += unknown_fields(claim_template["spec"], "V1PersistentVolumeClaimSpec")
    return errors


def test_kustomization_lists_every_manifest_but_the_per_session_claim() -> None:
    resources = kustomization()["resources"]
    assert sorted(resources) == [name for name in manifest_files() if name != "claim.yaml"]
    assert all((DEPLOY / name).is_file() for name in resources)


@pytest.mark.parametrize(
    "doc", [d for d in all_objects() if d["kind"] in SCHEMAS], ids=lambda d: f"{d['kind']}/{d['metadata']['name']}"
)
def test_agent_sandbox_objects_match_the_crd_schemas(doc: dict[str, Any]) -> None:
    if doc["kind"] == "SandboxTemplate":
        assert template_errors(doc) == []
    else:
        assert schema_errors(doc) + unknown_fields(doc["metadata"], "V1ObjectMeta") == []


@pytest.mark.parametrize(
    "doc", [d for d in all_objects() if d["kind"] in CORE_TYPES], ids=lambda d: f"{d['kind']}/{d['metadata']['name']}"
)
def test_core_objects_are_kubernetes_api_types(doc: dict[str, Any]) -> None:
    assert doc["apiVersion"] in ("v1", "networking.k8s.io/v1")
    assert unknown_fields(doc, CORE_TYPES[doc["kind"]]) == []


def test_every_object_kind_is_validated() -> None:
    assert {doc["kind"] for doc in all_objects()} <= set(SCHEMAS) | set(CORE_TYPES)


def test_the_generated_secret_is_a_secret_holding_every_key_the_templates_read() -> None:
    keys = env_file("secrets.env.example")
    secret = generated_secret(dict.fromkeys(keys, "value"))
    assert unknown_fields(secret, "V1Secret") == []
    for name in TEMPLATES:
        refs = [
            e["valueFrom"]["secretKeyRef"]
            for e in container(template(name))["env"]
            if "secretKeyRef" in e.get("valueFrom", {})
        ]
        secret_volumes = [v["secret"] for v in pod_spec(template(name))["volumes"] if "secret" in v]
        assert {ref["name"] for ref in refs} | {v["secretName"] for v in secret_volumes} == {secret["metadata"]["name"]}
        mounted = {item["key"] for volume in secret_volumes for item in volume["items"]}
        assert {ref["key"] for ref in refs} | mounted == set(keys)
        # The pool secret is a file of the keys init container only; the shared provider keys are optional.
        assert mounted == {"AGENTBOX_POOL_SECRET"} and all(ref.get("optional") for ref in refs)


def test_validation_catches_a_misspelt_field() -> None:
    """The checks above are not vacuous: a typo anywhere in a template is found."""
    sandbox_template = template()
    in_crd = copy.deepcopy(sandbox_template)
    in_crd["spec"]["warmPool"] = 2
    in_pod = copy.deepcopy(sandbox_template)
    pod_spec(in_pod)["containers"][0]["securityContext"]["readOnlyRootFS"] = True
    bad_enum = copy.deepcopy(sandbox_template)
    bad_enum["spec"]["networkPolicyManagement"] = "Off"
    no_name = copy.deepcopy(sandbox_template)
    del pod_spec(no_name)["containers"][0]["name"]
    assert template_errors(sandbox_template) == []
    assert any("warmPool" in error for error in template_errors(in_crd))
    assert any("readOnlyRootFS" in error for error in template_errors(in_pod))
    assert any("Off" in error for error in template_errors(bad_enum))
    with pytest.raises(ValueError, match="name"):
        template_errors(no_name)


@pytest.mark.parametrize("name", TEMPLATES)
def test_template_runs_hardened(name: str) -> None:
    spec = pod_spec(template(name))
    box = container(template(name))
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] == 1000  # the image's `sandbox` user
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec["automountServiceAccountToken"] is False
    assert box["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "privileged": False,
        "capabilities": {"drop": ["ALL"]},
    }
    for kind in ("requests", "limits"):
        assert set(box["resources"][kind]) == {"cpu", "memory"}
    ports = {port["name"]: port["containerPort"] for port in box["ports"]}
    live = box["livenessProbe"]["httpGet"]
    assert (live["path"], ports.get(live["port"], live["port"])) == ("/health", 8091)
    assert box["readinessProbe"]["exec"]["command"] == ["/usr/local/bin/agentbox-ready"]
    assert "# runtimeClassName: gvisor" in (DEPLOY / TEMPLATE_FILES[name]).read_text()  # the knob, shown


@pytest.mark.parametrize("name", TEMPLATES)
def test_only_the_workspace_and_scratch_mounts_are_writable(name: str) -> None:
    sandbox_template = template(name)
    claims = {t["metadata"]["name"] for t in sandbox_template["spec"]["volumeClaimTemplates"]}
    volumes = {v["name"]: v for v in pod_spec(sandbox_template).get("volumes", [])}
    read_only = {m["mountPath"]: m["name"] for m in container(sandbox_template)["volumeMounts"] if m.get("readOnly")}
    assert read_only == {"/run/agentbox-keys": "keys"}
    mounts = {m["mountPath"]: m["name"] for m in container(sandbox_template)["volumeMounts"] if not m.get("readOnly")}
    assert claims == {"workspace"} and mounts["/workspace"] == "workspace"
    assert not claims & set(volumes), "the controller adds the claim's volume itself"
    scratch = {path: volumes[volume] for path, volume in mounts.items() if volume != "workspace"}
    expected = {"/tmp", "/home/sandbox"} | ({"/dev/shm"} if name == "agentbox" else set())
    assert set(scratch) == expected
    assert all("emptyDir" in volume and volume["emptyDir"].get("sizeLimit") for volume in scratch.values())
    if name == "agentbox":
        assert scratch["/dev/shm"]["emptyDir"]["medium"] == "Memory"


def test_code_only_template_is_the_browser_template_without_the_browser() -> None:
    browser, code = (copy.deepcopy(template(name)) for name in TEMPLATES)
    code_env = container(code)["env"]
    assert {"name": "DISABLE_BROWSER", "value": "true"} in code_env
    code_env.remove({"name": "DISABLE_BROWSER", "value": "true"})
    browser_env = container(browser)["env"]
    assert {"name": "BROWSER_START_MODE", "value": "auto"} in browser_env  # ready once the page tools are
    browser_env.remove({"name": "BROWSER_START_MODE", "value": "auto"})
    for sandbox_template in (browser, code):
        sandbox_template["metadata"]["name"] = "x"
        sandbox_template["spec"]["podTemplate"]["metadata"]["labels"].pop("agentbox.dev/pool")
        container(sandbox_template).pop("resources")
        spec = pod_spec(sandbox_template)
        spec["volumes"] = [v for v in spec["volumes"] if v["name"] != "shm"]
        container(sandbox_template)["volumeMounts"] = [
            m for m in container(sandbox_template)["volumeMounts"] if m["name"] != "shm"
        ]
    assert browser == code


def test_names_resolve_between_objects() -> None:
    pod_labels = {name: template(name)["spec"]["podTemplate"]["metadata"]["labels"] for name in TEMPLATES}
    for pool in (d for d in all_objects() if d["kind"] == "SandboxWarmPool"):
        assert pool["spec"]["sandboxTemplateRef"]["name"] in TEMPLATES
    claim = find("SandboxClaim", "agentbox-demo")
    pool = find("SandboxWarmPool", claim["spec"]["warmPoolRef"]["name"])
    claimed_labels = {
        **pod_labels[pool["spec"]["sandboxTemplateRef"]["name"]],
        **claim["spec"]["additionalPodMetadata"]["labels"],
    }
    # The controller only propagates claim labels under its allowed domains (default sandbox.users.io).
    assert all(key.startswith("sandbox.users.io/") for key in claim["spec"]["additionalPodMetadata"]["labels"])
    service = find("Service", "agentbox-demo")
    assert service["spec"]["selector"].items() <= claimed_labels.items()
    ports = {p["name"]: p["containerPort"] for p in container(template())["ports"]}
    assert {p["targetPort"]: p["port"] for p in service["spec"]["ports"]} == ports
    policy = find("NetworkPolicy", "agentbox-sandboxes")
    for labels in pod_labels.values():
        assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    (ingress,) = policy["spec"]["ingress"]
    assert {p["port"] for p in ingress["ports"]} == set(ports.values())
    for name in TEMPLATES:
        assert template(name)["spec"]["networkPolicyManagement"] == "Unmanaged"
        assert template(name)["spec"]["service"] is True
