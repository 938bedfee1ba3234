"""One version source: ``agentbox_common/version.py``. pyproject.toml reads it for the
distribution's metadata, the programs report it, and no other file writes a version."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import agentbox_browser
import agentbox_gateway
from agentbox_common.version import __version__

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_reads_the_version_from_the_one_module() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "agentbox_common.version.__version__"


def test_the_installed_metadata_and_the_programs_report_it() -> None:
    # A stale editable install (the version changed since ``pip install -e``) fails here: reinstall.
    assert version("agentbox") == __version__
    assert agentbox_gateway.__version__ == agentbox_browser.__version__ == __version__


def test_no_other_module_writes_a_version() -> None:
    written = [
        path.relative_to(ROOT)
        for path in (ROOT / "services").rglob("*.py")
        if re.search(r"^__version__\s*=", path.read_text(encoding="utf-8"), re.MULTILINE)
    ]
    assert written == [Path("services/common/agentbox_common/version.py")]
