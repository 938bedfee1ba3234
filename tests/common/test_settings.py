"""The declared-settings mechanism (``agentbox_common.settings``) on a small settings class: one
declaration gives the variable's reading, the flag and its help, and the docs' default text."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentbox_common.settings import (
    ConfigError,
    add_flags,
    boolean,
    default_text,
    flag_values,
    integer,
    read_env,
    setting,
)


@dataclass(frozen=True)
class Example:
    port: int = setting(8100, env="EXAMPLE_PORT", parse=integer(minimum=1), flag="--port", help="port")
    headless: bool = setting(True, env="EXAMPLE_HEADLESS", parse=boolean, flag="--headless", help="headless")
    token: str = setting("", env="EXAMPLE_TOKEN")
    home: Path = setting(default_factory=Path.home, env="EXAMPLE_HOME", shown="`~`")


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="example")
    add_flags(parser, Example)
    return parser.parse_args(argv)


def test_unset_and_blank_keep_the_default_and_a_bad_value_names_the_variable() -> None:
    assert Example(**read_env(Example, {})) == Example()
    assert Example(**read_env(Example, {"EXAMPLE_PORT": " "})).port == 8100
    assert Example(**read_env(Example, {"EXAMPLE_PORT": "9", "EXAMPLE_TOKEN": ""})).port == 9
    with pytest.raises(ConfigError, match="EXAMPLE_PORT must be at least 1, got 0"):
        read_env(Example, {"EXAMPLE_PORT": "0"})


def test_flags_are_parsed_like_their_variables() -> None:
    assert flag_values(parse(), Example) == {}
    assert flag_values(parse("--port", "9", "--no-headless"), Example) == {"port": 9, "headless": False}
    with pytest.raises(ConfigError, match=r"EXAMPLE_PORT must be an integer, got 'x' \(given as --port\)"):
        flag_values(parse("--port", "x"), Example)


def test_help_and_readme_default_come_from_the_declaration() -> None:
    parser = argparse.ArgumentParser(prog="example")
    add_flags(parser, Example)
    assert "port (EXAMPLE_PORT, default 8100)" in " ".join(parser.format_help().split())
    shown = [default_text(Example, name) for name in ("port", "headless", "token", "home")]
    assert shown == ["`8100`", "`true`", "unset", "`~`"]
