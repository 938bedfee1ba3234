"""docs/configuration.md's variables tables, generated from the settings declarations.

Run ``scripts/gen-docs`` after declaring, renaming or removing a setting, or changing its default or
flag (``scripts/gen-docs --check`` only says whether the file is current; so does
``tests/common/test_settings_docs.py``). Each table (found by its bold heading, :data:`TABLES`) gets one
row per variable its programs' settings classes declare, in declaration order, then the rows of the
variables read elsewhere; a variable several programs declare has its row in the first table that
names it. The variable, flag and default columns are the declaration's. The meaning column is prose
people write: a row that exists keeps its meaning (and a note after its default, such as
``(1 GiB)``), a new row starts with the declaration's ``#:`` comment. Everything outside the tables is
left as it is.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import inspect
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from agentbox_browser.settings import BrowserSettings
from agentbox_common.settings import declarations, default_text, nested_classes
from agentbox_gateway.settings import DoctorSettings, GatewaySettings
from agentbox_mcp_mode.api_mode.settings import ApiModeSettings
from agentbox_mcp_mode.cron.config import CronSettings
from agentbox_mcp_mode.settings import McpModeSettings
from agentbox_mcp_mode.telegram_bot.settings import TelegramSettings

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "configuration.md"
COMMAND = "scripts/gen-docs"
ENTRYPOINT = "images/rootfs/usr/local/bin/agentbox-entrypoint"

#: Each table of docs/configuration.md (by the start of its bold heading): the settings classes it
#: documents, and its rows read by no settings class, with the file that reads them. "Image" is the
#: entrypoint's variables, written by hand (some are the programs' too: DISABLE_VNC).
TABLES: dict[str, tuple[tuple[type, ...], dict[str, str]]] = {
    "Gateway": (
        (GatewaySettings, DoctorSettings),
        {
            "LOG_FORMAT": "services/common/agentbox_common/logging.py",
            "LOG_LEVEL": "services/common/agentbox_common/logging.py",
            "AGENTBOX_HEADER_TIMEOUT": "services/common/agentbox_common/serving.py",
            "AGENTBOX_BODY_TIMEOUT": "services/common/agentbox_common/serving.py",
            "AGENTBOX_MAX_CONNECTIONS": "services/common/agentbox_common/serving.py",
        },
    ),
    "Browser program": ((BrowserSettings,), {}),
    "MCP mode and API mode": ((McpModeSettings, ApiModeSettings), {"AICODEBOX_API_MODE": ENTRYPOINT}),
    "Foreground modes": (
        (TelegramSettings, CronSettings),
        {
            "AICODEBOX_TELEGRAM_MODE": ENTRYPOINT,
            "AICODEBOX_PASSTHROUGH_MODE": ENTRYPOINT,
            "TELEGRAM_CHAT_ID": "services/mcp-mode/agentbox_mcp_mode/telegram_bot/settings.py",
        },
    ),
    "Image": ((), {}),
}
GENERATED = [name for name, (classes, _) in TABLES.items() if classes]

_VARIABLE = re.compile(r"`([A-Z][A-Z0-9_]+)`")
_FLAG = re.compile(r"`(--[a-z0-9][a-z0-9-]*)`")
_GROUP = re.compile(r" \([^)]*\)")


@dataclass(frozen=True)
class Row:
    """One table row: its variables (``A``, ``B`` rows document two), flags, default and meaning cells."""

    names: str
    default: str
    meaning: str

    @classmethod
    def parse(cls, line: str) -> Row:
        names, default, meaning = line.strip().removeprefix("|").removesuffix("|").split("|", 2)
        return cls(names.strip(), default.strip(), meaning.strip())

    @property
    def variables(self) -> list[str]:
        """The row's variables; those in parentheses are flags or other names of the same setting."""
        return _VARIABLE.findall(_GROUP.sub("", self.names))

    @property
    def flags(self) -> list[str]:
        return _FLAG.findall(self.names)

    def default_of(self, variable: str) -> str:
        """This variable's default cell; ``A``, ``B`` rows give one default each (``8081``, ``0.0.0.0``)."""
        if len(self.variables) == 1:
            return self.default
        parts = [part.strip() for part in self.default.split(",")]
        assert len(parts) == len(self.variables), f"row {self.variables}: one default per variable"
        return parts[self.variables.index(variable)]

    def line(self) -> str:
        return f"| {self.names} | {self.default} | {self.meaning} |"


@dataclass(frozen=True)
class Declared:
    """A documented variable: the settings class (and field) whose declaration the table shows."""

    variable: str
    cls: type
    field: str

    @property
    def flag(self) -> str | None:
        return declarations(self.cls)[self.field].flag

    @property
    def default(self) -> str:
        return default_text(self.cls, self.field)


def all_declarations(cls: type) -> list[tuple[type, str]]:
    """(class, field) of each declared variable, nested settings classes included, in field order."""
    found = [(cls, name) for name, d in declarations(cls).items() if d.variable is not None]
    for inner in nested_classes(cls).values():
        found += all_declarations(inner)
    return found


def declared_by_table() -> dict[str, dict[str, Declared]]:
    """Each generated table's declared variables, in order; a variable goes to the first table naming it."""
    seen: set[str] = set()
    tables: dict[str, dict[str, Declared]] = {}
    for table in GENERATED:
        tables[table] = {}
        for cls in TABLES[table][0]:
            for owner, field in all_declarations(cls):
                variable = declarations(owner)[field].variable
                assert variable is not None
                if variable not in seen:
                    seen.add(variable)
                    tables[table][variable] = Declared(variable, owner, field)
    return tables


def parse_tables(text: str) -> dict[str, list[Row]]:
    """The rows of each table under a bold heading that :data:`TABLES` names."""
    tables: dict[str, list[Row]] = {}
    heading = None
    for line in text.splitlines():
        if line.startswith("**") and line.endswith("**"):
            heading = next((name for name in TABLES if line.startswith(f"**{name}")), None)
            if heading is not None:
                tables.setdefault(heading, [])
        elif line.startswith("| `") and heading is not None:
            tables[heading].append(Row.parse(line))
    return tables


def comment_of(cls: type, field: str) -> str:
    """The ``#:`` comment above a field's declaration, as Markdown (Sphinx's attribute docs)."""
    lines = textwrap.dedent(inspect.getsource(cls)).splitlines()
    (klass,) = ast.parse("\n".join(lines)).body
    assert isinstance(klass, ast.ClassDef)
    for node in klass.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == field:
            above: list[str] = []
            index = node.lineno - 2
            while index >= 0 and lines[index].strip().startswith("#:"):
                above.insert(0, lines[index].strip().removeprefix("#:").strip())
                index -= 1
            prose = " ".join(above).replace("``", "`")
            return re.sub(r":[a-z]+:`~?\.?([^`]+)`", r"`\1`", prose).rstrip(".")
    return ""


def generated_row(variables: list[str], declared: dict[str, Declared], old: Row | None) -> Row:
    """A row for these variables: names and defaults from the declarations, the rest from ``old``."""
    flags = {v: declared[v].flag for v in variables if v in declared}
    names = ", ".join(f"`{v}` (`{flags[v]}`)" if flags.get(v) else f"`{v}`" for v in variables)
    if old is not None:
        names += "".join(group for group in _GROUP.findall(old.names) if not _FLAG.search(group))
    if not all(variable in declared for variable in variables):
        if old is None:
            raise SystemExit(f"{variables[0]} is read by no settings class: write its row in {DOC.relative_to(ROOT)}")
        return Row(names, old.default, old.meaning)
    defaults = [declared[variable].default for variable in variables]
    shown = ", ".join(defaults)
    if old is not None:
        parts = [old.default] if len(variables) == 1 else [part.strip() for part in old.default.split(",")]
        if len(parts) == len(defaults) and all(part.startswith(d) for part, d in zip(parts, defaults, strict=True)):
            shown = old.default  # the same defaults, with their notes
    first = declared[variables[0]]
    meaning = old.meaning if old is not None else comment_of(first.cls, first.field)
    meaning = meaning or declarations(first.cls)[first.field].help
    if not meaning:
        raise SystemExit(
            f"{variables[0]} has no meaning to show: write a `#:` comment above {first.cls.__name__}.{first.field}, "
            f"or its row in {DOC.relative_to(ROOT)}, then run {COMMAND}"
        )
    return Row(names, shown, meaning)


def table_rows(table: str, old_rows: list[Row], declared: dict[str, Declared]) -> list[Row]:
    """The table's rows: those of the file in its order (a row documenting several variables stays
    one while they all exist), without variables that are gone; a new variable's row goes after the
    row of the variable declared just before it."""
    order = [*declared, *TABLES[table][1]]
    groups: list[list[str]] = []
    for row in old_rows:
        placed = {v for group in groups for v in group}
        kept = [v for v in row.variables if v in order and v not in placed]
        if kept:
            groups.append(kept)
    for index, variable in enumerate(order):
        if any(variable in group for group in groups):
            continue
        earlier = [n for n, group in enumerate(groups) if set(group) & set(order[:index])]
        groups.insert(earlier[-1] + 1 if earlier else 0, [variable])
    old_by_variable = {variable: row for row in old_rows for variable in row.variables}
    return [generated_row(group, declared, old_by_variable.get(group[0])) for group in groups]


def render(text: str) -> str:
    """``text`` (docs/configuration.md) with its generated tables brought up to the declarations."""
    declared = declared_by_table()
    old = parse_tables(text)
    missing = [table for table in GENERATED if table not in old]
    if missing:
        raise SystemExit(f"{DOC.relative_to(ROOT)} has no table under a heading **{missing[0]}…**")
    out: list[str] = []
    heading = None
    for line in text.splitlines():
        if line.startswith("**") and line.endswith("**"):
            heading = next((name for name in GENERATED if line.startswith(f"**{name}")), None)
        if heading is not None and line.startswith("| `"):
            continue  # the old rows; the new ones follow the header's separator line
        out.append(line)
        if heading is not None and line.startswith("|---"):
            out += [row.line() for row in table_rows(heading, old[heading], declared[heading])]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 (with the diff) if the file is not current")
    args = parser.parse_args(argv)
    current = DOC.read_text(encoding="utf-8")
    wanted = render(current)
    if wanted == current:
        return 0
    if args.check:
        sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), wanted.splitlines(True), "now", "wanted"))
        print(f"{DOC.relative_to(ROOT)} is not current: run {COMMAND}", file=sys.stderr)
        return 1
    DOC.write_text(wanted, encoding="utf-8")
    print(f"{DOC.relative_to(ROOT)} regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
