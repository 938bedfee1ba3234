"""The context plane: what the sandbox is (:mod:`.plane`), the skills it carries (:mod:`.skills`) and
which planes are up (:mod:`.capabilities`)."""

from .capabilities import BrowserStatus, CapabilityReport, CodeCapability, ExecCapability
from .errors import ContextError, InvalidSkill, ListingToolUnavailable, SkillNotFound
from .plane import LANGUAGES, ContextPlane, PackageListing, SandboxContext
from .skills import (
    ARCHIVE_MAX_BYTES,
    SkillInfo,
    clear_skills,
    delete_skill,
    register_skills,
    skill_content,
    skill_metadata,
)

__all__ = [
    "ARCHIVE_MAX_BYTES",
    "LANGUAGES",
    "BrowserStatus",
    "CapabilityReport",
    "CodeCapability",
    "ContextError",
    "ContextPlane",
    "ExecCapability",
    "InvalidSkill",
    "ListingToolUnavailable",
    "PackageListing",
    "SandboxContext",
    "SkillInfo",
    "SkillNotFound",
    "clear_skills",
    "delete_skill",
    "register_skills",
    "skill_content",
    "skill_metadata",
]
