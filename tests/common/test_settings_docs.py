"""docs/configuration.md's variables tables against the settings declarations: the file is what
``scripts/gen-docs`` makes of them (a setting declared, renamed or given a new default fails here until
it is regenerated), every declared variable has a row showing its default (and its flag, where the row
names one), and every row of a program's table is declared by that program or read where the
generator says it is."""

from __future__ import annotations

import ast
import difflib
import inspect
from pathlib import Path

import pytest

from agentbox_common.settings import declarations, default_text, nested_classes
from scripts.gen_docs import COMMAND, DOC, ROOT, TABLES, Row, all_declarations, parse_tables, render

TEXT = DOC.read_text(encoding="utf-8")
TABLE_ROWS = parse_tables(TEXT)
DECLARED = list(dict.fromkeys(pair for classes, _ in TABLES.values() for c in classes for pair in all_declarations(c)))


def test_the_tables_are_generated_from_the_declarations() -> None:
    wanted = render(TEXT)
    diff = "".join(difflib.unified_diff(TEXT.splitlines(True), wanted.splitlines(True), "now", "generated", n=0))
    where = DOC.relative_to(ROOT)
    assert wanted == TEXT, f"{where} is not current with the settings declarations: run {COMMAND}\n{diff}"


def declaring_classes() -> set[tuple[str, str]]:
    """(file, class) of every class under services/ with a field made by ``setting()``."""
    found = set()
    for path in sorted((ROOT / "services").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(field, ast.AnnAssign)
                and isinstance(field.value, ast.Call)
                and "setting" in (getattr(field.value.func, "id", None), getattr(field.value.func, "attr", None))
                for field in node.body
            ):
                found.add((str(path.relative_to(ROOT)), node.name))
    return found


def documented_classes() -> set[tuple[str, str]]:
    """(file, class) of the settings classes the generated tables show, nested ones included."""
    pending = [cls for classes, _ in TABLES.values() for cls in classes]
    found = set()
    while pending:
        cls = pending.pop()
        found.add((str(Path(inspect.getfile(cls)).resolve().relative_to(ROOT)), cls.__name__))
        pending += nested_classes(cls).values()
    return found


def test_every_settings_class_is_in_a_table() -> None:
    """A new program's (or a door's own) settings class is documented once it is listed in TABLES."""
    assert ("services/gateway/agentbox_gateway/settings.py", "GatewaySettings") in declaring_classes()
    missing = declaring_classes() - documented_classes()
    assert not missing, f"settings classes in no table: {sorted(missing)}; add them to TABLES in scripts/gen_docs.py"


def test_every_table_is_found() -> None:
    assert set(TABLE_ROWS) == set(TABLES) and all(TABLE_ROWS.values())


@pytest.mark.parametrize(("cls", "field_name"), DECLARED, ids=[f"{c.__name__}.{n}" for c, n in DECLARED])
def test_a_declared_variable_has_a_row_with_its_default_and_flag(cls: type, field_name: str) -> None:
    declaration = declarations(cls)[field_name]
    programs = [rows for name, rows in TABLE_ROWS.items() if name != "Image"]
    rows = [row for rows in programs for row in rows if declaration.variable in row.variables]
    # One row per variable, in its program's table or, when several programs read it, in one of theirs.
    assert len(rows) == 1, f"{declaration.variable} needs one row in {DOC.relative_to(ROOT)}: run {COMMAND}"
    (row,) = rows
    expected = default_text(cls, field_name)
    others = [(c, n) for c, n in DECLARED if declarations(c)[n].variable == declaration.variable]
    shown = row.default_of(declaration.variable)
    # A variable two programs read (the Telegram token: required by Telegram mode, optional for
    # cron) is documented once, with one of its defaults.
    assert any(shown.startswith(default_text(c, n)) for c, n in others), (
        f"{declaration.variable}: the docs say {shown!r}, the declaration {expected!r}: run {COMMAND}"
    )
    if row.flags:
        assert declaration.flag in row.flags, f"{declaration.variable}: the docs name {row.flags}: run {COMMAND}"


@pytest.mark.parametrize("table", [name for name in TABLES if name != "Image"])
def test_every_row_is_declared_or_read_where_listed(table: str) -> None:
    classes, elsewhere = TABLES[table]
    declared = {declarations(c)[n].variable for cls in classes for c, n in all_declarations(cls)}
    for row in TABLE_ROWS[table]:
        for variable in row.variables:
            if variable in declared:
                continue
            assert variable in elsewhere, f"docs' {table} table: {variable} is declared by no settings class"
            assert variable in (ROOT / elsewhere[variable]).read_text(encoding="utf-8"), (
                f"{variable} is not read in {elsewhere[variable]}"
            )


def test_a_new_declaration_gets_a_row_after_its_neighbour_with_its_comment() -> None:
    """A setting declared without a row (here: the row taken out) comes back where it belongs, its
    meaning the ``#:`` comment of its field."""
    (row,) = [line for line in TEXT.splitlines() if line.startswith("| `AIO_MAX_FILE_WATCHERS` |")]
    regenerated = render(TEXT.replace(row + "\n", "")).splitlines()
    new = regenerated.index(
        "| `AIO_MAX_FILE_WATCHERS` | `128` | How many `/v1/file/watch` and `/v2/watch` watchers may run at once"
        " (429 past it) |"
    )
    assert regenerated[new - 1].startswith("| `AIO_COMMAND_RETAIN_CHARS` |")


def test_a_changed_default_or_flag_is_rewritten_and_a_row_nobody_declares_is_dropped() -> None:
    stale = TEXT.replace("| `AIO_MCP_LIST_TIMEOUT` | `2` |", "| `AIO_MCP_LIST_TIMEOUT` | `3` (three) |")
    stale = stale.replace("| `AIO_API_KEY` (`--api-key`) |", "| `AIO_API_KEY` (`--key`) |")
    stale = stale.replace("| `AIO_CDP_URL` |", "| `AIO_GONE` | `1` | a setting since removed |\n| `AIO_CDP_URL` |")
    assert stale != TEXT
    assert render(stale) == TEXT


def test_a_flag_with_a_digit_is_read_as_a_flag() -> None:
    """``--v2-…`` flags (the /v2 door's) are flags, so a regenerated row does not name one twice."""
    row = Row.parse("| `AIO_V2_MAX` (`--v2-max`), `AIO_B` (`--b`) | `1`, `2` | two settings |")
    assert row.flags == ["--v2-max", "--b"] and row.variables == ["AIO_V2_MAX", "AIO_B"]
