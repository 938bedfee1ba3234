"""Skills: SKILL.md folders under the skills directory, listed by name and description or loaded
whole. Files are read in a worker thread, and only the first megabyte of each."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio.to_thread
import yaml

from .context_errors import ContextError, SkillNotFound

SKILL_FILE = "SKILL.md"
SKILL_MAX_BYTES = 1024 * 1024


def _split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """YAML front matter (``---`` ... ``---``) and the body after it; bad YAML counts as none."""
    match = re.match(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", text, re.DOTALL)
    if not match:
        return {}, text
    try:
        front = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        front = None
    return (front if isinstance(front, dict) else {}), text[match.end() :]


def _description(front: dict[str, Any], body: str) -> str:
    described = front.get("description")
    if isinstance(described, str) and described.strip():
        return " ".join(described.split())
    for paragraph in re.split(r"\n\s*\n", body):
        stripped = paragraph.strip()
        if stripped and not stripped.startswith("#"):
            return " ".join(stripped.split())
    return "(no description)"


def _read_skill_file(path: Path) -> str:
    with open(path, "rb") as handle:
        return handle.read(SKILL_MAX_BYTES).decode("utf-8", errors="replace")


def _list_skills(root: Path) -> list[tuple[str, str]]:
    try:
        folders = sorted(entry for entry in root.iterdir() if not entry.name.startswith("."))
    except OSError:
        return []
    skills = []
    for folder in folders:
        skill_file = folder / SKILL_FILE
        if folder.is_dir() and skill_file.is_file():
            try:
                front, body = _split_front_matter(_read_skill_file(skill_file))
            except OSError:
                continue
            skills.append((folder.name, _description(front, body)))
    return skills


def _load_skill(root: Path, name: str) -> str:
    folder = root / name
    try:
        text = _read_skill_file(folder / SKILL_FILE)
    except OSError:
        raise SkillNotFound(f"Skill not found: {name}") from None
    _front, body = _split_front_matter(text)
    return f"Base Path: {folder}\n\n{body.lstrip(chr(10))}"


async def load_skill(root: Path, name: str | None = None) -> str:
    """No name: ``Skills Count: N`` and one ``- name`` / description pair per skill; a name: its
    ``Base Path`` and SKILL.md body. Unknown names raise :class:`SkillNotFound`."""
    if not name:
        skills = await anyio.to_thread.run_sync(_list_skills, root)
        lines = [f"Skills Count: {len(skills)}"]
        for skill, description in skills:
            lines += [f"- {skill}", f"  {description}"]
        return "\n".join(lines)
    if "/" in name or "\\" in name or "\x00" in name or name.startswith(".") or name != name.strip():
        raise ContextError(f"Invalid skill name: {name} (a folder name under the skills directory)")
    return await anyio.to_thread.run_sync(_load_skill, root, name)
