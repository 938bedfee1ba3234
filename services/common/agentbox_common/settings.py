"""Typed reads of environment variables, and settings declared once.

Every service reads its configuration once at start-up. A bad value must stop the program with a
message that names the variable, so these helpers raise :class:`ConfigError` carrying that name.

A settings dataclass declares each setting once, as a field made by :func:`setting`: its default,
its variable, how the variable's text is parsed, and its command-line flag and help. ``from_env``
(:func:`load`, :func:`read_env`), the flags and their help (:func:`add_flags`, :func:`flag_values`)
and the README's variables tables (checked by ``tests/common/test_settings_readme.py``) all follow
from that declaration.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
T = TypeVar("T")
_DECLARATION = "agentbox.setting"
_NESTED = "agentbox.settings"

#: Turns a variable's text into the setting's value, naming the variable in a ConfigError;
#: None keeps the declared default (a blank number, say).
Parser = Callable[[str, str], Any]


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the variable."""


def _environ(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


# Parsers: (variable name, text) -> value, or None for "keep the default".


def text(name: str, raw: str) -> str:
    """The text as given, empty included."""
    return raw


def stripped(name: str, raw: str) -> str:
    """The text without surrounding blanks, empty included."""
    return raw.strip()


def nonblank(name: str, raw: str) -> str | None:
    """The stripped text; blank keeps the default."""
    return raw.strip() or None


def boolean(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name} must be a boolean (1/0, true/false), got {raw!r}")


def present(name: str, raw: str) -> bool:
    """True when the variable holds something (``OTEL_EXPORTER_OTLP_ENDPOINT`` turns tracing on)."""
    return bool(raw.strip())


def _bounded(convert: Callable[[str], Any], kind: str, minimum: Any, maximum: Any) -> Parser:
    def parse(name: str, raw: str) -> Any:
        if raw.strip() == "":
            return None
        try:
            value = convert(raw.strip())
        except ValueError:
            raise ConfigError(f"{name} must be {kind}, got {raw!r}") from None
        if minimum is not None and value < minimum:
            raise ConfigError(f"{name} must be at least {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise ConfigError(f"{name} must be at most {maximum}, got {value}")
        return value

    return parse


def integer(minimum: int | None = None, maximum: int | None = None) -> Parser:
    """An integer within the bounds; blank keeps the default."""
    return _bounded(int, "an integer", minimum, maximum)


def number(minimum: float = 0.0) -> Parser:
    """A number at least ``minimum``; blank keeps the default."""
    return _bounded(float, "a number", minimum, None)


#: A TCP port to listen on.
port_number = integer(minimum=1, maximum=65535)


def parse_csv(name: str, raw: str) -> list[str]:
    """Split a comma-separated value; a set-but-empty list is an error naming the variable."""
    values = [part.strip() for part in raw.split(",") if part.strip()]
    if not values:
        raise ConfigError(f"{name} must contain at least one value; leave it unset to keep the default")
    return values


def csv(name: str, raw: str) -> tuple[str, ...]:
    """A comma-separated list replacing the default; set to empty is refused."""
    return tuple(parse_csv(name, raw))


def csv_or_empty(name: str, raw: str) -> tuple[str, ...]:
    """A comma-separated list; empty means an empty list."""
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def parse_json_object(name: str, raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{name} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{name} must be a JSON object, got {type(value).__name__}")
    return value


def json_object(name: str, raw: str) -> dict[str, Any] | None:
    """A JSON object; blank keeps the default."""
    return parse_json_object(name, raw) if raw.strip() else None


def path(name: str, raw: str) -> Path:
    return Path(raw)


def home_path(name: str, raw: str) -> Path | None:
    """A path, ``~`` expanded; blank keeps the default."""
    return Path(raw.strip()).expanduser() if raw.strip() else None


# Single reads, for a variable that is no dataclass's field.


def read_variable(name: str, parse: Parser, default: Any, env: Mapping[str, str] | None = None) -> Any:
    """One variable, parsed; unset (or parsed to None) gives ``default``."""
    raw = _environ(env).get(name)
    value = None if raw is None else parse(name, raw)
    return default if value is None else value


def env_str(name: str, default: str = "", env: Mapping[str, str] | None = None) -> str:
    return _environ(env).get(name, default)


def env_bool(name: str, default: bool = False, env: Mapping[str, str] | None = None) -> bool:
    return bool(read_variable(name, boolean, default, env))


def env_int(
    name: str,
    default: int,
    env: Mapping[str, str] | None = None,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int:
    return int(read_variable(name, integer(minimum, maximum), default, env))


def env_float(name: str, default: float, env: Mapping[str, str] | None = None, *, minimum: float = 0.0) -> float:
    return float(read_variable(name, number(minimum), default, env))


# Declared settings.


@dataclasses.dataclass(frozen=True)
class Declaration:
    """Where one setting comes from. ``variable`` or ``flag`` (or both); ``shown`` is how the
    README's variables table shows a default that is computed (``~/skills``) rather than written."""

    variable: str | None
    #: None: the class's ``from_env`` reads the variable itself (its default depends on others).
    parse: Parser | None
    flag: str | None = None
    help: str = ""
    metavar: str | None = None
    shown: str | None = None

    @property
    def name(self) -> str:
        """What an error about the value names: the variable (a flag is the same setting), else the flag."""
        name = self.variable or self.flag
        assert name is not None, "a setting needs a variable or a flag"
        return name


def setting(
    default: Any = dataclasses.MISSING,
    *,
    env: str | None = None,
    parse: Parser | None = text,
    default_factory: Callable[[], Any] | Any = dataclasses.MISSING,
    flag: str | None = None,
    help: str = "",
    metavar: str | None = None,
    shown: str | None = None,
) -> Any:
    """A dataclass field read from the variable ``env`` and/or the command-line ``flag``."""
    declaration = Declaration(env, parse, flag, help, metavar, shown)
    return dataclasses.field(default=default, default_factory=default_factory, metadata={_DECLARATION: declaration})


def nested(cls: type) -> Any:
    """A field holding another declared settings class, read from the same environment."""
    return dataclasses.field(default_factory=cls, metadata={_NESTED: cls})


def declarations(cls: type) -> dict[str, Declaration]:
    """The class's declared settings by field name, in field order (nested classes' not included)."""
    return {f.name: f.metadata[_DECLARATION] for f in dataclasses.fields(cls) if _DECLARATION in f.metadata}


def nested_classes(cls: type) -> dict[str, type]:
    return {f.name: f.metadata[_NESTED] for f in dataclasses.fields(cls) if _NESTED in f.metadata}


def read_env(cls: type, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Field values of ``cls`` from the variables that are set (the others keep their defaults)."""
    source = _environ(env)
    values: dict[str, Any] = {}
    for field_name, declaration in declarations(cls).items():
        if declaration.variable is None or declaration.parse is None:
            continue
        raw = source.get(declaration.variable)
        value = None if raw is None else declaration.parse(declaration.variable, raw)
        if value is not None:
            values[field_name] = value
    for field_name, inner in nested_classes(cls).items():
        values[field_name] = inner(**read_env(inner, source))
    return values


def load(cls: type[T], env: Mapping[str, str] | None = None, /, **overrides: Any) -> T:
    """``cls`` from the environment; keyword overrides (the flags, values computed by the caller)
    win when not None."""
    return cls(**{**read_env(cls, env), **given(overrides)})


def given(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword overrides of a ``from_env`` that were given (None: not given)."""
    return {key: value for key, value in overrides.items() if value is not None}


def default_text(cls: type, field_name: str) -> str:
    """The default as the README's variables table shows it: ``shown``, else the value ("unset" when empty)."""
    declaration = declarations(cls)[field_name]
    if declaration.shown is not None:
        return declaration.shown
    (found,) = [f for f in dataclasses.fields(cls) if f.name == field_name]
    if found.default is dataclasses.MISSING and found.default_factory is dataclasses.MISSING:
        return "required"
    value = found.default if found.default_factory is dataclasses.MISSING else found.default_factory()
    if value in ("", (), {}, None):
        return "unset"
    if isinstance(value, bool):
        value = str(value).lower()
    elif isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"`{value}`"


def described(cls: type, field_name: str) -> str:
    """``VARIABLE (default)`` for a usage text (``AICODEBOX_MCP_MODE_PORT (8081)``)."""
    declaration = declarations(cls)[field_name]
    return f"{declaration.name} ({default_text(cls, field_name).replace('`', '')})"


def _flag_help(cls: type, field_name: str, declaration: Declaration) -> str:
    """The declared help, followed by the variable and the default: ``port (AGENTBOX_BROWSER_PORT, default 8100)``."""
    if not declaration.help:
        return f"same as {declaration.variable}"
    default = default_text(cls, field_name)
    notes = [declaration.variable] if declaration.variable else []
    if default != "unset":
        notes.append(f"default {default.replace('`', '')}")
    return f"{declaration.help} ({', '.join(notes)})"


def add_flags(parser: argparse.ArgumentParser, cls: type, fields: tuple[str, ...] | None = None) -> None:
    """One option per declared flag of ``cls`` (or of ``fields``), in declaration order; a boolean
    setting gets ``--x/--no-x``. Every option defaults to None: not given."""
    for field_name, declaration in declarations(cls).items():
        if declaration.flag is None or (fields is not None and field_name not in fields):
            continue
        options: dict[str, Any] = {"default": None, "help": _flag_help(cls, field_name, declaration)}
        if declaration.parse is boolean:
            options["action"] = argparse.BooleanOptionalAction
        else:
            options["metavar"] = declaration.metavar or declaration.flag.lstrip("-").upper().replace("-", "_")
        parser.add_argument(declaration.flag, dest=field_name, **options)


def flag_values(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The given flags' values, parsed as their settings' variables are (a bad one is a ConfigError
    naming the variable, and the flag it came from)."""
    values: dict[str, Any] = {}
    for field_name, declaration in declarations(cls).items():
        raw = getattr(args, field_name, None) if declaration.flag is not None else None
        if raw is None or declaration.parse is None:
            continue
        if isinstance(raw, bool):
            values[field_name] = raw
            continue
        try:
            values[field_name] = declaration.parse(declaration.name, raw)
        except ConfigError as exc:
            if declaration.variable is None:
                raise
            raise ConfigError(f"{exc} (given as {declaration.flag})") from None
    return values
