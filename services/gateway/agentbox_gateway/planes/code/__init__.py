"""The code plane: warm Python and JavaScript interpreters for stateless calls and sessions."""

from .plane import (
    DEFAULT_TIMEOUT,
    LANGUAGES,
    MAX_TIMEOUT,
    SESSION_IDLE,
    CellError,
    CodeError,
    CodePlane,
    Execution,
    InvalidRequest,
    RuntimeInfo,
    RuntimeUnavailable,
    SessionInfo,
    SessionLimitReached,
    SessionNotFound,
    UnsupportedLanguage,
    normalize_language,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "LANGUAGES",
    "MAX_TIMEOUT",
    "SESSION_IDLE",
    "CellError",
    "CodeError",
    "CodePlane",
    "Execution",
    "InvalidRequest",
    "RuntimeInfo",
    "RuntimeUnavailable",
    "SessionInfo",
    "SessionLimitReached",
    "SessionNotFound",
    "UnsupportedLanguage",
    "normalize_language",
]
