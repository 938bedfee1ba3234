"""The README's variables tables (section Configuration) against the settings declarations: every
declared variable has a row showing its default (and its flag, where the row names one), and every
row of a program's table is declared by that program or read where the test says it is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentbox_browser.settings import BrowserSettings
from agentbox_common.settings import declarations, default_text, nested_classes
from agentbox_gateway.settings import DoctorSettings, GatewaySettings
from agentbox_mcp_mode.api_mode.settings import ApiModeSettings
from agentbox_mcp_mode.cron.config import CronSettings
from agentbox_mcp_mode.settings import McpModeSettings
from agentbox_mcp_mode.telegram_bot.settings import TelegramSettings

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
ENTRYPOINT = "images/rootfs/usr/local/bin/agentbox-entrypoint"

#: Each table of the Configuration section (by the start of its bold heading): the settings classes
#: it documents, and its rows read by no settings class, with the file that reads them.
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
    "Image": ((), {}),  # the entrypoint's variables; some are the programs' too (DISABLE_VNC)
}


class Row:
    def __init__(self, names: str, default: str) -> None:
        self.variables = re.findall(r"`([A-Z][A-Z0-9_]+)`", names.split("(")[0])
        self.flags = re.findall(r"`(--[a-z-]+)`", names)
        self.default = default.strip()

    def default_of(self, variable: str) -> str:
        """This variable's default cell; ``A``, ``B`` rows give one default each (``8081``, ``0.0.0.0``)."""
        if len(self.variables) == 1:
            return self.default
        parts = [part.strip() for part in self.default.split(",")]
        assert len(parts) == len(self.variables), f"row {self.variables}: one default per variable"
        return parts[self.variables.index(variable)]


def readme_tables() -> dict[str, list[Row]]:
    section = README.read_text(encoding="utf-8").split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    tables: dict[str, list[Row]] = {}
    heading = None
    for line in section.splitlines():
        if line.startswith("**") and line.endswith("**"):
            heading = next(name for name in TABLES if line.startswith(f"**{name}"))
            tables.setdefault(heading, [])
        elif line.startswith("| `") and heading is not None:
            names, default, _meaning = line.strip("|").split("|", 2)
            tables[heading].append(Row(names, default))
    return tables


def all_declarations(cls: type) -> list[tuple[type, str]]:
    """(class, field) of each declared variable, nested settings classes included."""
    found = [(cls, name) for name, d in declarations(cls).items() if d.variable is not None]
    for inner in nested_classes(cls).values():
        found += all_declarations(inner)
    return found


TABLE_ROWS = readme_tables()
DECLARED = list(dict.fromkeys(pair for classes, _ in TABLES.values() for c in classes for pair in all_declarations(c)))


def test_every_table_is_found() -> None:
    assert set(TABLE_ROWS) == set(TABLES) and all(TABLE_ROWS.values())


@pytest.mark.parametrize(("cls", "field_name"), DECLARED, ids=[f"{c.__name__}.{n}" for c, n in DECLARED])
def test_a_declared_variable_has_a_row_with_its_default_and_flag(cls: type, field_name: str) -> None:
    declaration = declarations(cls)[field_name]
    programs = [rows for name, rows in TABLE_ROWS.items() if name != "Image"]
    rows = [row for rows in programs for row in rows if declaration.variable in row.variables]
    # One row per variable, in its program's table or, when several programs read it, in one of theirs.
    assert len(rows) == 1, f"{declaration.variable} needs one row in the README's variables tables"
    (row,) = rows
    expected = default_text(cls, field_name)
    others = [(c, n) for c, n in DECLARED if declarations(c)[n].variable == declaration.variable]
    shown = row.default_of(declaration.variable)
    # A variable two programs read (the Telegram token: required by Telegram mode, optional for
    # cron) is documented once, with one of its defaults.
    assert any(shown.startswith(default_text(c, n)) for c, n in others), (
        f"{declaration.variable}: README says {shown!r}, the declaration {expected!r}"
    )
    if row.flags:
        assert declaration.flag in row.flags, f"{declaration.variable}: README names {row.flags}"


@pytest.mark.parametrize("table", [name for name in TABLES if name != "Image"])
def test_every_row_is_declared_or_read_where_listed(table: str) -> None:
    classes, elsewhere = TABLES[table]
    declared = {declarations(c)[n].variable for cls in classes for c, n in all_declarations(cls)}
    for row in TABLE_ROWS[table]:
        for variable in row.variables:
            if variable in declared:
                continue
            assert variable in elsewhere, f"README's {table} table: {variable} is declared by no settings class"
            assert variable in (ROOT / elsewhere[variable]).read_text(encoding="utf-8"), (
                f"{variable} is not read in {elsewhere[variable]}"
            )
