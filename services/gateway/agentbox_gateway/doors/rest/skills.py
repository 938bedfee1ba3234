"""REST door of the skills registry, as the agent-sandbox SDK's ``skills`` client calls it:
``POST /v1/skills/register`` (multipart: an archive ``file``, or a folder ``path``; ``name``),
``GET /v1/skills/metadatas?names=``, ``GET /v1/skills/{name}/content``, ``DELETE /v1/skills/{name}``,
``DELETE /v1/skills``. The skills live under ``AIO_SKILLS_PATH``, where ``sandbox_load_skill`` reads."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, File, Form, Path, Query, UploadFile

from agentbox_common.errors import TooLarge

from ...planes.context import skills
from ...settings import GatewaySettings
from .bodies import SKILL_NAME, documented
from .envelope import error_responses, ok

if TYPE_CHECKING:
    from ...planes import Planes


#: A skill's name in a path: the plane's rule, documented (the plane still refuses with 400).
_NAME = Path(json_schema_extra=documented(SKILL_NAME))


def _metadata(info: skills.SkillInfo) -> dict[str, Any]:
    return {"name": info.name, "path": info.path, "metadata": info.metadata}


def router(planes: Planes, settings: GatewaySettings) -> APIRouter:
    root = settings.skills_path
    api = APIRouter(prefix="/v1/skills", tags=["skills"], responses=error_responses(400, 404, 409, 413))

    @api.post("/register")
    async def register(
        file: UploadFile | None = File(None),  # noqa: B008
        path: str | None = Form(None),
        name: str | None = Form(None),
    ) -> dict[str, Any]:
        """Install the skill(s) of a zip/tar archive (a SKILL.md at its top, or skill folders) or of a
        sandbox folder; ``{count, registered: [{name, path, metadata}]}``. Same-named skills are replaced."""
        data = await file.read(skills.ARCHIVE_MAX_BYTES + 1) if file is not None else b""
        if len(data) > skills.ARCHIVE_MAX_BYTES:
            raise TooLarge(f"the archive is larger than {skills.ARCHIVE_MAX_BYTES} bytes")
        installed = await planes.context.register_skills(data, path or None, name or None)
        return ok({"count": len(installed), "registered": [_metadata(info) for info in installed]})

    @api.get("/metadatas")
    async def metadatas(names: str | None = Query(None, description="comma-separated")) -> dict[str, Any]:
        """``{skills: [{name, path, metadata}]}``: every skill, or the named ones, with its front matter."""
        wanted = [n.strip() for n in names.split(",") if n.strip()] if names else None
        return ok({"skills": [_metadata(info) for info in await skills.skill_metadata(root, wanted)]})

    @api.get("/{name}/content")
    async def content(name: str = _NAME) -> dict[str, Any]:
        """``{name, path, content}``: SKILL.md without its front matter."""
        info = await skills.skill_content(root, name)
        return ok({key: value for key, value in asdict(info).items() if key != "metadata"})

    @api.delete("/{name}")
    async def delete(name: str = _NAME) -> dict[str, Any]:
        """Remove one skill; answers its metadata as it was."""
        return ok(_metadata(await planes.context.delete_skill(name)))

    @api.delete("")
    async def clear() -> dict[str, Any]:
        """Remove every skill folder; ``{removed: [names], count}``."""
        removed = await planes.context.clear_skills()
        return ok({"removed": removed, "count": len(removed)})

    return api
