"""An OpenAPI description of sandboxd's filesystem and runtime REST API as agentbox serves it, for the
bounded schemathesis pass over the image (tests/e2e/test_image_sandboxd.py). It follows the spec's
``filesystem.yaml`` (KEP-539.2): the same paths, parameters, bodies and schemas, plus the answers the
spec leaves to the server that agentbox gives (401 with a key set, 409 for a file replaced during
an operation, 413 past ``AIO_MAX_UPLOAD_BYTES``) and the one it describes otherwise (an upload's
body is not required: none writes an empty file)."""

from __future__ import annotations

from typing import Any


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


_ERRORS = {
    "400": _error("Invalid request parameters or payload"),
    "401": _error("Missing or invalid API key (AIO_API_KEY)"),
    "403": _error("Path escapes the sandbox root, or permission denied"),
    "404": _error("Path does not exist within the sandbox"),
    "409": _error("Directory not empty, or the path changed during the operation"),
    "413": _error("Upload larger than AIO_MAX_UPLOAD_BYTES"),
}


def _answers(*codes: str, **others: Any) -> dict[str, Any]:
    return {**{code: _ERRORS[code] for code in codes}, **others}


_PATH = {
    "name": "path",
    "in": "path",
    "required": True,
    "schema": {"type": "string"},
    "description": "Sandbox-relative path; '/' inside it encoded as %2F.",
}

_READ = {
    "200": {
        "description": "File contents or directory listing",
        "content": {
            "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
            "application/json": {"schema": {"$ref": "#/components/schemas/DirectoryListing"}},
        },
    },
}

SCHEMA: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "sandboxd Filesystem & Runtime REST API (agentbox)", "version": "v1"},
    "paths": {
        "/files/{path}": {
            "parameters": [_PATH],
            "get": {"operationId": "readFile", "responses": _answers("400", "401", "403", "404", "409", **_READ)},
            "head": {"operationId": "probeFile", "responses": _answers("400", "401", "403", "404", "409", **_READ)},
            "put": {
                "operationId": "writeFile",
                "parameters": [
                    {
                        "name": "mode",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "string", "pattern": "^0[0-7]{3}$", "default": "0644"},
                    }
                ],
                # The spec says required; as its server does, no body writes an empty file (a client
                # sending none and one sending an empty file look alike: Content-Length 0, or none).
                "requestBody": {
                    "required": False,
                    "content": {
                        "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
                        "multipart/form-data": {
                            "schema": {
                                "type": "object",
                                "required": ["file"],
                                "properties": {"file": {"type": "string", "format": "binary"}},
                            }
                        },
                    },
                },
                "responses": _answers(
                    "400", "401", "403", "404", "409", "413", **{"204": {"description": "File written"}}
                ),
            },
            "delete": {
                "operationId": "removeFile",
                "parameters": [
                    {
                        "name": "recursive",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "boolean", "default": False},
                    }
                ],
                "responses": _answers("400", "401", "403", "404", "409", **{"204": {"description": "Removed"}}),
            },
        },
        "/health": {
            "get": {
                "operationId": "health",
                "responses": {
                    "200": {
                        "description": "Healthy",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/HealthResponse"}}},
                    },
                    "503": _error("Shutting down"),
                },
            }
        },
        "/metadata": {
            "get": {
                "operationId": "metadata",
                "responses": {
                    "200": {
                        "description": "Runtime metadata",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/MetadataResponse"}}},
                    },
                    "401": _ERRORS["401"],
                },
            }
        },
    },
    "components": {
        "schemas": {
            "DirectoryListing": {
                "type": "object",
                "required": ["path", "entries"],
                "properties": {
                    "path": {"type": "string"},
                    "entries": {"type": "array", "items": {"$ref": "#/components/schemas/FileEntry"}},
                },
            },
            "FileEntry": {
                "type": "object",
                "required": ["name", "size", "type", "modified_at"],
                "properties": {
                    "name": {"type": "string"},
                    "size": {"type": "integer", "format": "int64"},
                    "type": {"type": "string", "enum": ["file", "directory"]},
                    "modified_at": {"type": "string", "format": "date-time"},
                    "mode": {"type": "string", "pattern": "^0[0-7]{3}$"},
                },
            },
            "HealthResponse": {
                "type": "object",
                "required": ["status"],
                "properties": {"status": {"type": "string", "enum": ["ok"]}, "uptime_seconds": {"type": "integer"}},
            },
            "MetadataResponse": {
                "type": "object",
                "properties": {"env": {"type": "object", "additionalProperties": {"type": "string"}}},
            },
            "Error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
            },
        }
    },
}
