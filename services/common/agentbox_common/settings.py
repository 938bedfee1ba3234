"""Typed reads of environment variables.

Every service reads its configuration once at start-up. A bad value must stop the program with a
message that names the variable, so these helpers raise :class:`ConfigError` carrying that name.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the variable."""


def _environ(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def env_str(name: str, default: str = "", env: Mapping[str, str] | None = None) -> str:
    return _environ(env).get(name, default)


def env_bool(name: str, default: bool = False, env: Mapping[str, str] | None = None) -> bool:
    raw = _environ(env).get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name} must be a boolean (1/0, true/false), got {raw!r}")


def env_int(
    name: str,
    default: int,
    env: Mapping[str, str] | None = None,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int:
    raw = _environ(env).get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{name} must be at most {maximum}, got {value}")
    return value


def env_float(name: str, default: float, env: Mapping[str, str] | None = None, *, minimum: float = 0.0) -> float:
    raw = _environ(env).get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw.strip())
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {value}")
    return value


def parse_csv(name: str, raw: str) -> list[str]:
    """Split a comma-separated value; a set-but-empty list is an error naming the variable."""
    values = [part.strip() for part in raw.split(",") if part.strip()]
    if not values:
        raise ConfigError(f"{name} must contain at least one value; leave it unset to keep the default")
    return values


def env_csv(name: str, default: list[str], env: Mapping[str, str] | None = None) -> list[str]:
    """A comma-separated list that replaces ``default`` when set; set to empty is refused."""
    raw = _environ(env).get(name)
    if raw is None:
        return list(default)
    return parse_csv(name, raw)


def env_json_object(name: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    raw = _environ(env).get(name)
    if raw is None or raw.strip() == "":
        return {}
    return parse_json_object(name, raw)


def parse_json_object(name: str, raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{name} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{name} must be a JSON object, got {type(value).__name__}")
    return value
