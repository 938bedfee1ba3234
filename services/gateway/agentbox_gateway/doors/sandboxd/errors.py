"""How sandboxd answers a plane's error: a gRPC status code, or an HTTP status with the spec's
``{"code", "message"}`` body. Each kind maps once; an escaping path is the spec's own case
(``PERMISSION_DENIED``, 403), where MCP mode calls it a bad argument."""

from __future__ import annotations

import grpc

from agentbox_common.errors import ErrorKind, PlaneError
from agentbox_common.workspace_files import PathEscapes

#: The gRPC code and the REST (status, code) of each kind.
_BY_KIND: dict[ErrorKind, tuple[grpc.StatusCode, int, str]] = {
    ErrorKind.INVALID: (grpc.StatusCode.INVALID_ARGUMENT, 400, "INVALID_ARGUMENT"),
    ErrorKind.NOT_FOUND: (grpc.StatusCode.NOT_FOUND, 404, "NOT_FOUND"),
    ErrorKind.DENIED: (grpc.StatusCode.PERMISSION_DENIED, 403, "PERMISSION_DENIED"),
    ErrorKind.CONFLICT: (grpc.StatusCode.FAILED_PRECONDITION, 409, "CONFLICT"),
    ErrorKind.LIMIT: (grpc.StatusCode.RESOURCE_EXHAUSTED, 429, "RESOURCE_EXHAUSTED"),
    ErrorKind.TOO_LARGE: (grpc.StatusCode.RESOURCE_EXHAUSTED, 413, "RESOURCE_EXHAUSTED"),
    ErrorKind.UNAVAILABLE: (grpc.StatusCode.UNAVAILABLE, 503, "UNAVAILABLE"),
    ErrorKind.TIMEOUT: (grpc.StatusCode.DEADLINE_EXCEEDED, 504, "DEADLINE_EXCEEDED"),
    ErrorKind.FAILED: (grpc.StatusCode.INTERNAL, 500, "INTERNAL"),
}

ESCAPE_MESSAGE = "path traversal outside sandbox root is forbidden"


def grpc_status(error: PlaneError) -> tuple[grpc.StatusCode, str]:
    if isinstance(error, PathEscapes):
        return grpc.StatusCode.PERMISSION_DENIED, f"cwd: {error.message}"
    return _BY_KIND[error.kind][0], error.message


def rest_error(error: PlaneError) -> tuple[int, dict[str, str]]:
    if isinstance(error, PathEscapes):
        return 403, {"code": "PERMISSION_DENIED", "message": ESCAPE_MESSAGE}
    _, status, code = _BY_KIND[error.kind]
    return status, {"code": code, "message": error.message}
