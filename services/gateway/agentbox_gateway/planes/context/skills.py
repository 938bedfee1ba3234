"""Skills: SKILL.md folders under the skills directory, listed by name and description or loaded
whole, registered from an archive or a folder, described by their front matter, removed. Files are
read in a worker thread, and only the first megabyte of each SKILL.md."""

from __future__ import annotations

import io
import re
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread

from .errors import InvalidSkill, SkillNotFound

SKILL_FILE = "SKILL.md"
SKILL_MAX_BYTES = 1024 * 1024


def _split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """YAML front matter (``---`` ... ``---``) and the body after it; bad YAML counts as none."""
    import yaml  # imported where used: a gateway nobody asks for skills never loads it

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


def _is_folder_name(name: str) -> bool:
    """One folder right under the skills directory: no separator, no dot folder, no padding."""
    return bool(name) and not any(c in name for c in "/\\\x00") and not name.startswith(".") and name == name.strip()


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


def skill_names(root: Path) -> list[str]:
    """The installed skills' names (folders holding a SKILL.md), sorted; a directory read, no file."""
    try:
        folders = sorted(entry for entry in root.iterdir() if not entry.name.startswith("."))
    except OSError:
        return []
    return [folder.name for folder in folders if (folder / SKILL_FILE).is_file()]


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
    if not _is_folder_name(name):
        raise InvalidSkill(f"Invalid skill name: {name} (a folder name under the skills directory)")
    return await anyio.to_thread.run_sync(_load_skill, root, name)


# --- the skills registry: register (archive or folder), metadata, content, delete, clear ----------

#: The most an uploaded skills archive may unpack to, and how many files it may hold.
ARCHIVE_MAX_BYTES = 256 * 1024 * 1024
ARCHIVE_MAX_FILES = 10_000


@dataclass(frozen=True)
class SkillInfo:
    name: str
    path: str
    #: SKILL.md's front matter.
    metadata: dict[str, Any]
    #: SKILL.md's body (front matter removed).
    content: str = ""


def check_name(name: str) -> str:
    if not _is_folder_name(name):
        raise InvalidSkill(f"Invalid skill name: {name!r} (a folder name under the skills directory)")
    return name


def _info(folder: Path) -> SkillInfo:
    try:
        front, body = _split_front_matter(_read_skill_file(folder / SKILL_FILE))
    except OSError:
        raise SkillNotFound(f"Skill not found: {folder.name}") from None
    return SkillInfo(folder.name, str(folder.resolve()), front, body.lstrip("\n"))


def _skill_folders(source: Path) -> list[Path]:
    """``source`` itself when it holds a SKILL.md, else its sub-folders that do."""
    if (source / SKILL_FILE).is_file():
        return [source]
    return sorted(f for f in source.iterdir() if not f.name.startswith(".") and (f / SKILL_FILE).is_file())


def _install(root: Path, source: Path, name: str | None, fallback: str | None) -> list[SkillInfo]:
    """Copy the skill folder(s) of ``source`` into ``root``. A skill at the top of ``source`` is named
    ``name``, else its front matter's ``name``, else ``fallback``."""
    folders = _skill_folders(source)
    if not folders:
        raise InvalidSkill(f"no {SKILL_FILE} found (at the top or one folder down)")
    if name is not None and len(folders) > 1:
        raise InvalidSkill(f"a name can only be given for one skill; found {len(folders)}")
    targets: list[tuple[Path, str]] = []
    for folder in folders:
        front, _ = _split_front_matter(_read_skill_file(folder / SKILL_FILE))
        chosen: str | None
        if folder != source:
            chosen = name or folder.name
        else:
            chosen = name or (front["name"] if isinstance(front.get("name"), str) else fallback)
            if not chosen:
                raise InvalidSkill("the skill has no name: give one (name), or a `name:` in its front matter")
        check_name(chosen)
        targets.append((folder, chosen))
    root.mkdir(parents=True, exist_ok=True)
    installed = []
    for folder, chosen in targets:
        destination = root / chosen
        if destination.resolve() == folder.resolve():  # already in place
            installed.append(_info(destination))
            continue
        staging = Path(tempfile.mkdtemp(prefix=f".{chosen}-", dir=root))
        shutil.copytree(folder, staging / "skill", symlinks=True)
        if destination.exists():
            shutil.rmtree(destination)
        (staging / "skill").rename(destination)
        staging.rmdir()
        installed.append(_info(destination))
    return installed


def _unpack(data: bytes, into: Path) -> None:
    """A zip or tar(.gz/.bz2/.xz) archive, refusing links out, absolute or ``..`` paths and bombs."""
    import tarfile  # imported where used, like yaml

    buffer = io.BytesIO(data)
    if zipfile.is_zipfile(buffer):
        with zipfile.ZipFile(buffer) as archive:
            members = archive.infolist()
            if len(members) > ARCHIVE_MAX_FILES or sum(m.file_size for m in members) > ARCHIVE_MAX_BYTES:
                raise InvalidSkill("the archive is too large")
            for member in members:
                target = (into / member.filename).resolve()
                if not target.is_relative_to(into.resolve()) or (member.external_attr >> 16) & 0o170000 == 0o120000:
                    raise InvalidSkill(f"unsafe path in the archive: {member.filename}")
            archive.extractall(into)
        return
    buffer.seek(0)
    try:
        with tarfile.open(fileobj=buffer) as archive:
            entries = archive.getmembers()
            if len(entries) > ARCHIVE_MAX_FILES or sum(m.size for m in entries) > ARCHIVE_MAX_BYTES:
                raise InvalidSkill("the archive is too large")
            archive.extractall(into, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise InvalidSkill(f"not a zip or tar archive, or an unsafe one ({exc})") from None


def _register(root: Path, data: bytes | None, path: str | None, name: str | None) -> list[SkillInfo]:
    if name is not None:
        check_name(name)
    if data:
        with tempfile.TemporaryDirectory(prefix="skill-upload-") as scratch:
            _unpack(data, Path(scratch))
            source, fallback = Path(scratch), None
            entries = [e for e in source.iterdir() if not e.name.startswith(".")]
            if not (source / SKILL_FILE).is_file() and len(entries) == 1 and entries[0].is_dir():
                source, fallback = entries[0], entries[0].name  # an archive of one folder
            return _install(root, source, name, fallback)
    if not path:
        raise InvalidSkill("give an archive (file) or a folder path")
    source = Path(path)
    if not source.is_dir():
        raise SkillNotFound(f"no such folder: {path}")
    return _install(root, source, name, source.resolve().name)


async def register_skills(root: Path, data: bytes | None, path: str | None, name: str | None) -> list[SkillInfo]:
    """Install the skill(s) of an archive or a folder under ``root`` (replacing same-named ones)."""
    return await anyio.to_thread.run_sync(_register, root, data, path, name)


def _metadata(root: Path, names: list[str] | None) -> list[SkillInfo]:
    if names:
        return [_info(root / check_name(name)) for name in names]
    return [_info(root / name) for name, _ in _list_skills(root)]


async def skill_metadata(root: Path, names: list[str] | None = None) -> list[SkillInfo]:
    """Every skill (or the named ones: :class:`SkillNotFound` for one that is not there)."""
    return await anyio.to_thread.run_sync(_metadata, root, names)


async def skill_content(root: Path, name: str) -> SkillInfo:
    return await anyio.to_thread.run_sync(_info, root / check_name(name))


def _delete(root: Path, name: str) -> SkillInfo:
    info = _info(root / check_name(name))
    shutil.rmtree(root / name)
    return info


async def delete_skill(root: Path, name: str) -> SkillInfo:
    return await anyio.to_thread.run_sync(_delete, root, name)


def _clear(root: Path) -> list[str]:
    removed = []
    for name, _ in _list_skills(root):
        shutil.rmtree(root / name)
        removed.append(name)
    return removed


async def clear_skills(root: Path) -> list[str]:
    """Remove every skill folder (a SKILL.md folder) under ``root``; other files stay."""
    return await anyio.to_thread.run_sync(_clear, root)
