"""The code plane: warm Python and JavaScript interpreters for stateless calls and sessions."""

from .errors import (
    CodeError,
    InvalidRequest,
    RuntimeUnavailable,
    SessionLimitReached,
    SessionNotFound,
    UnsupportedLanguage,
)
from .plane import (
    DEFAULT_TIMEOUT,
    LANGUAGES,
    MAX_TIMEOUT,
    SESSION_IDLE,
    CellError,
    CodePlane,
    Execution,
    RuntimeInfo,
    SessionInfo,
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
