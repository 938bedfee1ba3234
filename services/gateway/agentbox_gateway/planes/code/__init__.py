"""The code plane: warm Python and JavaScript interpreters for stateless calls and sessions."""

from .errors import (
    CodeError,
    CodeSessionNotFound,
    InterpreterUnavailable,
    InvalidCodeRequest,
    SessionLimitReached,
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
    "CodeSessionNotFound",
    "Execution",
    "InterpreterUnavailable",
    "InvalidCodeRequest",
    "RuntimeInfo",
    "SessionInfo",
    "SessionLimitReached",
    "UnsupportedLanguage",
    "normalize_language",
]
