"""One language vocabulary: the code and context planes accept the same names and aliases, and each
publishes its own name (the code plane's ``javascript``, the context's ``nodejs`` runtime)."""

from __future__ import annotations

import pytest

from agentbox_gateway.planes.code import LANGUAGES, UnsupportedLanguage, normalize_language
from agentbox_gateway.planes.context import LANGUAGES as RUNTIMES
from agentbox_gateway.planes.languages import Language

JAVASCRIPT_NAMES = ("javascript", "js", "node", "nodejs", "NodeJS", "JS")
PYTHON_NAMES = ("python", "python3", "py", "Python")


def test_every_name_means_one_language_with_each_plane_s_name() -> None:
    assert {Language.parse(name) for name in JAVASCRIPT_NAMES} == {Language.JAVASCRIPT}
    assert {Language.parse(name) for name in PYTHON_NAMES} == {Language.PYTHON}
    assert Language.parse("ruby") is None
    assert (LANGUAGES, RUNTIMES) == (("python", "javascript"), ("python", "nodejs"))
    assert [normalize_language(f" {name} ") for name in JAVASCRIPT_NAMES] == ["javascript"] * len(JAVASCRIPT_NAMES)
    assert normalize_language(None) == "python"
    with pytest.raises(UnsupportedLanguage, match="supported languages: python, javascript"):
        normalize_language("ruby")
