"""The languages the sandbox runs, named once: the code plane runs them, the context plane reports
their runtimes and packages. Each plane keeps the name it publishes (the code plane's ``javascript``,
the context's ``nodejs`` runtime); both accept the same names and aliases for either."""

from __future__ import annotations

import enum


class Language(enum.StrEnum):
    """A language; its value is the name the code plane publishes (``/v1/code/*``, the MCP tool)."""

    PYTHON = "python"
    JAVASCRIPT = "javascript"

    @property
    def runtime(self) -> str:
        """The name of the language's runtime in the sandbox context (``python``, ``nodejs``)."""
        return _RUNTIME_NAMES[self]

    @classmethod
    def parse(cls, name: str) -> Language | None:
        """The language ``name`` means (its name, its runtime's or a common alias, any case), or None."""
        return _ALIASES.get(name.lower())


_RUNTIME_NAMES = {Language.PYTHON: "python", Language.JAVASCRIPT: "nodejs"}
_ALIASES = {
    "python": Language.PYTHON,
    "python3": Language.PYTHON,
    "py": Language.PYTHON,
    "javascript": Language.JAVASCRIPT,
    "js": Language.JAVASCRIPT,
    "node": Language.JAVASCRIPT,
    "nodejs": Language.JAVASCRIPT,
}
