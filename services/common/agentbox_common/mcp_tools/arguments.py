"""A tool call's arguments checked against its input schema, once, before the tool runs, with one
way to say what is wrong (``cmd is required``) so an agent reads the same sentence from every MCP
server here.

Schemas say "optional" by leaving a field out of ``required``, never with a ``null`` type, which
strict clients (OpenAI's, Gemini's) refuse. Models still often send every field, unused ones as
null: a null is taken as an omitted field, also in the nested objects a schema describes (but not
in a free-form object such as an object ``run_prompt`` takes as ``json_schema``, whose nulls are data)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .results import ToolError

if TYPE_CHECKING:
    import jsonschema
    import jsonschema.protocols
    import jsonschema_rs

#: The properties of a schema that are described objects themselves, each with its own such fields.
Fields = dict[str, "Fields"]


class ArgumentCheck:
    """One tool's check (the validator of the schema's ``$schema`` draft, 2020-12 when it names
    none): call it with the arguments as sent to get them without their nulls, or a
    :class:`ToolError` naming the first problem (a missing argument before any other).

    The validator is compiled by the tool's first call, and jsonschema imported then: importing it
    is about 0.1 s that a server's start and its ``tools/list`` do not need.

    Arguments a schema of only :data:`PLAIN_KEYWORDS` accepts are first checked by jsonschema-rs
    (0.2 µs instead of some 20 µs, a tenth of a built-in call): when it says valid they are, and
    anything else is judged, and described, by jsonschema as before."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self._schema = schema
        self._validator: jsonschema.protocols.Validator | None = None
        self._fast: jsonschema_rs.Validator | None = None
        self._fields = described_objects(schema)

    def __call__(self, arguments: dict[str, Any] | None) -> dict[str, Any]:
        args = without_nulls(arguments or {}, self._fields)
        if self._fast is not None and self._fast.is_valid(args):
            return args
        errors = sorted(self._compiled().iter_errors(args), key=lambda e: (e.validator != "required", e.path))
        if errors:
            raise ToolError(describe_invalid_arguments(errors[0]))
        return args

    def _compiled(self) -> jsonschema.protocols.Validator:
        if self._validator is None:
            import jsonschema.validators

            validator = jsonschema.validators.validator_for(self._schema, default=jsonschema.Draft202012Validator)
            self._validator = validator(self._schema)
            self._fast = fast_validator(self._schema)
        return self._validator


#: Keywords jsonschema and jsonschema-rs read the same way. Left out: ``$ref`` and friends
#: (jsonschema-rs would fetch remote ones), ``pattern`` (Rust's regular expressions are not
#: Python's), ``format``, ``uniqueItems`` (``1`` and ``True``) and whatever else this does not name.
PLAIN_KEYWORDS = frozenset(
    {
        *("type", "enum", "const", "required", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"),
        *("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "multipleOf"),
        *("properties", "additionalProperties", "items", "anyOf", "oneOf", "allOf", "not"),
        *("$schema", "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"),
    }
)
_SUBSCHEMA = frozenset({"additionalProperties", "items", "not"})
_SUBSCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf"})


def is_plain(schema: Any) -> bool:
    """Whether ``schema`` and every schema inside it use only :data:`PLAIN_KEYWORDS`."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or not PLAIN_KEYWORDS.issuperset(schema):
        return False
    for key, value in schema.items():
        if key == "properties" and not (isinstance(value, dict) and all(map(is_plain, value.values()))):
            return False
        if key in _SUBSCHEMA and not is_plain(value):
            return False
        if key in _SUBSCHEMA_LISTS and not (isinstance(value, list) and all(map(is_plain, value))):
            return False
    return True


def fast_validator(schema: dict[str, Any]) -> jsonschema_rs.Validator | None:
    """jsonschema-rs's validator of a plain schema (:func:`is_plain`), else None."""
    if not is_plain(schema):
        return None
    import jsonschema_rs

    try:
        return jsonschema_rs.validator_for(schema)
    except ValueError:  # a schema it cannot compile (its ValidationError): jsonschema alone
        return None


def described_objects(schema: dict[str, Any]) -> Fields:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    return {
        name: described_objects(sub)
        for name, sub in properties.items()
        if isinstance(sub, dict) and isinstance(sub.get("properties"), dict)
    }


def without_nulls(arguments: dict[str, Any], fields: Fields) -> dict[str, Any]:
    """``arguments`` without the fields whose value is null, in ``fields``' nested objects too."""
    return {
        key: without_nulls(value, fields[key]) if key in fields and isinstance(value, dict) else value
        for key, value in arguments.items()
        if value is not None
    }


def describe_invalid_arguments(error: jsonschema.ValidationError) -> str:
    """A short sentence naming the argument and what it must be."""
    expected: Any = error.validator_value  # the schema keyword's value: names for required, values for enum
    given: Any = error.instance or {}
    location = ".".join(str(part) for part in error.absolute_path)
    where = location or "arguments"
    if error.validator == "required":
        missing = [name for name in expected if name not in given]
        return f"{missing[0]} is required" if missing else error.message
    if error.validator == "additionalProperties":
        schema: Any = error.schema
        known = sorted(schema.get("properties", {}))
        extra = sorted(set(given) - set(known))
        return f"unexpected argument {', '.join(extra)} (accepted: {', '.join(known) or 'none'})"
    if error.validator == "type":
        return f"{where} must be of type {expected}"
    if error.validator == "enum":
        return f"{where} must be one of {', '.join(repr(v) for v in expected)}"
    return f"{location}: {error.message}" if location else error.message
