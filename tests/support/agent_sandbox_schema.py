"""JSON Schemas of the agent-sandbox extension resources our manifests use (SandboxTemplate, SandboxWarmPool,
SandboxClaim; group extensions.agents.x-k8s.io, version v1beta1, the stored one; v1alpha1 is also served).

Written for these tests, field by field, from the CRDs' openAPIV3Schema in kubernetes-sigs/agent-sandbox at
commit 2fd412d55ecae90861a101a5424a75473de97c36 (v0.5.6-12), files
k8s/crds/extensions.agents.x-k8s.io_sandboxtemplates.yaml, ..._sandboxwarmpools.yaml and
..._sandboxclaims.yaml, and the Go types in extensions/api/v1beta1/ (no PyPI package ships the CRDs, the
k8s-agent-sandbox client included). Every ``spec`` field of that version is listed with its type, enum,
minimum and required-ness; an unknown field is an error here, as the API server's strict field validation
makes it one. Where the CRD embeds a Kubernetes type (the PodSpec, a PersistentVolumeClaimSpec, NetworkPolicy
rules) the schema says ``object`` and the tests check that part against the Kubernetes API types instead.
"""

from __future__ import annotations

from typing import Any

GROUP_VERSION = "extensions.agents.x-k8s.io/v1beta1"

_STRING_MAP: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}
_POD_METADATA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"labels": _STRING_MAP, "annotations": _STRING_MAP},
}
_VOLUME_CLAIM_TEMPLATES: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["spec"],
        "properties": {
            "metadata": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"name": {"type": "string"}, "labels": _STRING_MAP, "annotations": _STRING_MAP},
            },
            "spec": {"type": "object"},  # a core/v1 PersistentVolumeClaimSpec
        },
    },
}
_NAME_REF: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {"name": {"type": "string"}},
}


def _resource(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": GROUP_VERSION},
            "kind": {"const": kind},
            "metadata": {"type": "object", "required": ["name"]},  # checked as a V1ObjectMeta
            "spec": spec,
        },
    }


SANDBOX_TEMPLATE = _resource(
    "SandboxTemplate",
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["podTemplate"],
        "properties": {
            "podTemplate": {
                "type": "object",
                "additionalProperties": False,
                "required": ["spec"],
                "properties": {"metadata": _POD_METADATA, "spec": {"type": "object", "required": ["containers"]}},
            },
            "volumeClaimTemplates": _VOLUME_CLAIM_TEMPLATES,
            "service": {"type": "boolean"},
            "networkPolicy": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"ingress": {"type": "array"}, "egress": {"type": "array"}},
            },
            "networkPolicyManagement": {"enum": ["Managed", "Unmanaged"]},
            "envVarsInjectionPolicy": {"enum": ["Allowed", "Overrides", "Disallowed"]},
            "volumeClaimTemplatesPolicy": {"enum": ["Disallowed", "Allowed", "Overrides"]},
        },
    },
)

SANDBOX_WARM_POOL = _resource(
    "SandboxWarmPool",
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["sandboxTemplateRef"],
        "properties": {
            "replicas": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
            "sandboxTemplateRef": _NAME_REF,
            "updateStrategy": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"type": {"enum": ["Recreate", "OnReplenish"]}},
            },
        },
    },
)

SANDBOX_CLAIM = _resource(
    "SandboxClaim",
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["warmPoolRef"],
        "properties": {
            "warmPoolRef": _NAME_REF,
            "lifecycle": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "shutdownTime": {"type": "string", "format": "date-time"},
                    "ttlSecondsAfterFinished": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
                    "shutdownPolicy": {"enum": ["Delete", "DeleteForeground", "Retain"]},
                },
            },
            "additionalPodMetadata": _POD_METADATA,
            "env": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["name", "value"],
                    "properties": {
                        "name": {"type": "string"},
                        "value": {"type": "string"},
                        "containerName": {"type": "string"},
                    },
                },
            },
            "volumeClaimTemplates": _VOLUME_CLAIM_TEMPLATES,
        },
    },
)

SCHEMAS = {"SandboxTemplate": SANDBOX_TEMPLATE, "SandboxWarmPool": SANDBOX_WARM_POOL, "SandboxClaim": SANDBOX_CLAIM}
