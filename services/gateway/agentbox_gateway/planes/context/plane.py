"""The context plane: what this sandbox is (OS, user, runtimes, occupied ports and their preview
URLs, tools), which packages its interpreters have, which skills it carries (:mod:`.skills`), and
which planes are up right now (:mod:`.capabilities`).

Probes that start programs (runtime versions, tool lookup) are cached for a short while; everything
blocking runs in a worker thread or as an asyncio subprocess, never on the event loop."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import platform
import pwd
import re
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from agentbox_common.processes import run_bounded, sandbox_environment

from ... import __version__
from ...settings import GatewaySettings
from ..languages import Language
from ..preview import PreviewHosts, preview_links
from .capabilities import BrowserStatus, Capabilities, CapabilityReport
from .errors import ContextError, ListingToolUnavailable
from .ports import app_ports, listeners, listening_ports
from .skills import SkillInfo, clear_skills, delete_skill, load_skill, register_skills, skill_names

#: How long runtime/tool probes stay fresh (seconds).
PROBE_TTL = 30.0
PROBE_TIMEOUT = 10.0
PACKAGES_TIMEOUT = 60.0
LANGUAGES = tuple(language.runtime for language in Language)

#: Command-line tools worth telling an agent about, by category; only those on PATH are reported.
UTILS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("shell", (("bash", "GNU Bourne-Again shell"), ("tmux", "terminal multiplexer"))),
    ("search", (("rg", "ripgrep, fast recursive search"), ("grep", "search text"), ("find", "find files"))),
    (
        "files",
        (
            ("tar", "archives"),
            ("zip", "zip archives"),
            ("unzip", "extract zip archives"),
            ("jq", "JSON processor"),
        ),
    ),
    ("network", (("curl", "HTTP client"), ("wget", "downloader"), ("ssh", "OpenSSH client"))),
    ("vcs", (("git", "version control"),)),
    (
        "python",
        (("pip3", "Python package installer"), ("uv", "fast Python package manager"), ("jupyter", "Jupyter")),
    ),
    (
        "nodejs",
        (
            ("npm", "Node.js package manager"),
            ("npx", "run npm packages"),
            ("pnpm", "package manager"),
            ("yarn", "package manager"),
        ),
    ),
    ("build", (("make", "GNU make"), ("gcc", "C compiler"), ("g++", "C++ compiler"))),
    ("editors", (("vim", "Vi IMproved"), ("nano", "simple editor"))),
    (
        "media",
        (("ffmpeg", "audio/video converter"), ("convert", "ImageMagick"), ("pandoc", "document converter")),
    ),
    ("browser", (("chromium", "Chromium web browser"),)),
)
_RUNTIMES = {Language.PYTHON.runtime: ("python3", "python"), Language.JAVASCRIPT.runtime: ("node", "nodejs")}
_VERSION_COMMANDS = {Language.PYTHON.runtime: ["--version"], Language.JAVASCRIPT.runtime: ["--version"]}

_PYTHON_PACKAGES = (
    "import importlib.metadata as m\n"
    "seen = {}\n"
    "for d in m.distributions():\n"
    "    name = d.metadata['Name']\n"
    "    if name and name.lower() not in seen:\n"
    "        seen[name.lower()] = (name, d.version)\n"
    "for name, version in sorted(seen.values(), key=lambda p: p[0].lower()):\n"
    "    print(f'{name}=={version}')\n"
)


@dataclass
class SandboxContext:
    """One snapshot of the sandbox's environment (AIO's ``/v1/sandbox`` detail, flattened for MCP)."""

    version: str
    home_dir: str
    user: str
    os: str
    os_version: str
    arch: str
    timezone: str
    occupied_ports: list[str]
    runtimes: dict[str, list[dict[str, Any]]]
    utils: list[dict[str, Any]]
    workspace: str | None = None
    #: ``[{port, url, absproxy_url, preview_url}]``: every listening port but the gateway's, opened
    #: through the gateway (``preview_url`` on a preview origin of its own, for a person's browser).
    previews: list[dict[str, Any]] = field(default_factory=list)

    def system(self) -> dict[str, Any]:
        """The facts about the machine and its user (``workspace`` only when there is one)."""
        system = {
            "os": self.os,
            "os_version": self.os_version,
            "arch": self.arch,
            "user": self.user,
            "home_dir": self.home_dir,
            "timezone": self.timezone,
            "occupied_ports": self.occupied_ports,
            "previews": self.previews,
        }
        if self.workspace:
            system["workspace"] = self.workspace
        return system

    def summary(self) -> str:
        """The multi-line text AIO 1.x returned as ``info`` (and ``/v1/sandbox`` returns as ``data``)."""
        runtimes = []
        for language, specs in self.runtimes.items():
            for spec in specs:
                runtimes.append(f"{language} {spec.get('ver') or '?'} ({spec.get('bin')})")
        tools = [tool["name"] for category in self.utils for tool in category["tools"]]
        lines = [
            f"agentbox sandbox {self.version}",
            f"OS: {self.os_version} ({self.os} {self.arch})",
            f"User: {self.user}",
            f"Home directory: {self.home_dir}",
        ]
        if self.workspace:
            lines.append(f"Workspace: {self.workspace}")
        lines += [
            f"Timezone: {self.timezone}",
            f"Occupied ports: {', '.join(self.occupied_ports) or 'none'}",
            f"Preview URLs: {', '.join(p['preview_url'] for p in self.previews) or 'none'}",
            f"Runtimes: {'; '.join(runtimes) or 'none'}",
            f"Tools: {', '.join(tools) or 'none'}",
        ]
        return "\n".join(lines)


@dataclass
class PackageListing:
    language: str
    packages: list[dict[str, str]] = field(default_factory=list)

    def text(self) -> str:
        separator = "==" if self.language == "python" else "@"
        return "\n".join(f"{p['name']}{separator}{p['version']}" for p in self.packages)


# --------------------------------------------------------------------------- probes (sync, in threads)


def _static_system() -> dict[str, str]:
    """Facts that do not change while the gateway runs."""
    os_version = platform.release()
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                os_version = line.split("=", 1)[1].strip().strip('"')
    try:
        user = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        user = os.environ.get("USER") or str(os.geteuid())
    return {
        "os": platform.system(),
        "os_version": os_version,
        "arch": platform.machine(),
        "user": user,
        "home_dir": os.path.expanduser("~"),
    }


def _timezone() -> str:
    if os.environ.get("TZ"):
        return os.environ["TZ"].lstrip(":")
    with contextlib.suppress(OSError):
        name = Path("/etc/timezone").read_text().strip()
        if name:
            return name
    with contextlib.suppress(OSError):
        target = os.readlink("/etc/localtime")
        if "zoneinfo/" in target:
            return target.split("zoneinfo/", 1)[1]
    return time.tzname[0] or "UTC"


def _workspace() -> str | None:
    workspace = os.environ.get("AICODEBOX_WORKSPACE")
    return workspace if workspace and os.path.isdir(workspace) else None


def _available_utils(path: str | None) -> list[dict[str, Any]]:
    categories = []
    for category, tools in UTILS:
        present = [{"name": name, "description": text} for name, text in tools if shutil.which(name, path=path)]
        if present:
            categories.append({"category": category, "tools": present})
    return categories


def _runtime_binaries(path: str | None) -> dict[str, dict[str, list[str]]]:
    """Per language: first path of each distinct binary (symlinks followed) -> its names on PATH."""
    found: dict[str, dict[str, list[str]]] = {}
    for language, names in _RUNTIMES.items():
        binaries: dict[str, list[str]] = {}
        first_path: dict[str, str] = {}
        for name in names:
            located = shutil.which(name, path=path)
            if located:
                located = first_path.setdefault(os.path.realpath(located), located)
                binaries.setdefault(located, []).append(name)
        found[language] = binaries
    return found


# --------------------------------------------------------------------------- the plane


class ContextPlane:
    def __init__(self, settings: GatewaySettings, browser_status: BrowserStatus | None = None) -> None:
        self.settings = settings
        #: The browser plane's status probe, for the capability report.
        self.browser_status = browser_status
        self._static: dict[str, str] | None = None
        self._probed: tuple[float, dict[str, list[dict[str, Any]]], list[dict[str, Any]]] | None = None
        self._probe_lock = anyio.Lock()
        self._capabilities = Capabilities()
        self._skill_listeners: list[Callable[[], Awaitable[None]]] = []

    async def aclose(self) -> None:
        self._probed = None
        self._capabilities.forget()

    # --- context

    async def get_context(self, public_base: str = "") -> SandboxContext:
        """The snapshot; preview URLs are built on ``public_base``, the gateway as the caller sees it
        (the door knows it: the plane does not know the gateway's address); without one none are listed."""
        if self._static is None:
            self._static = await anyio.to_thread.run_sync(_static_system)
        runtimes, utils = await self._runtimes_and_utils()

        def volatile() -> tuple[list[str], list[int], str, str | None]:
            found = listeners()
            return listening_ports(found), app_ports(found, self.settings.own_ports()), _timezone(), _workspace()

        ports, apps, timezone, workspace = await anyio.to_thread.run_sync(volatile)
        return SandboxContext(
            version=__version__,
            timezone=timezone,
            occupied_ports=ports,
            runtimes=runtimes,
            utils=utils,
            workspace=workspace,
            previews=preview_links(apps, public_base, PreviewHosts(self.settings.preview_host)) if public_base else [],
            **self._static,
        )

    async def _runtimes_and_utils(self) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
        async with self._probe_lock:
            if self._probed is not None and time.monotonic() - self._probed[0] < PROBE_TTL:
                return self._probed[1], self._probed[2]
            path = sandbox_environment().get("PATH")
            binaries = await anyio.to_thread.run_sync(_runtime_binaries, path)
            utils = await anyio.to_thread.run_sync(_available_utils, path)
            runtimes: dict[str, list[dict[str, Any]]] = {}
            for language, found in binaries.items():
                specs = []
                for binary, aliases in found.items():
                    version = await _probe_version(binary, _VERSION_COMMANDS[language])
                    specs.append({"ver": version, "bin": binary, "alias": aliases})
                runtimes[language] = specs
            self._probed = (time.monotonic(), runtimes, utils)
            return runtimes, utils

    # --- packages

    async def get_packages(self, language: str | None = None) -> list[PackageListing]:
        """Installed packages of the sandbox's ``python3`` and global npm; None means both."""
        if language is None:
            return [await self._packages(name) for name in LANGUAGES]
        found = Language.parse(language)
        if found is None:
            raise ContextError(f"Unsupported language: {language} (use python or nodejs)")
        return [await self._packages(found.runtime)]

    async def packages_text(self, language: str | None = None) -> str:
        listings = await self.get_packages(language)
        if len(listings) == 1:
            return listings[0].text()
        return "\n\n".join(f"# {listing.language}\n{listing.text()}" for listing in listings)

    async def _packages(self, language: str) -> PackageListing:
        path = sandbox_environment().get("PATH")
        if language == "python":
            python = await _which("python3", path)
            if python is None:
                raise ListingToolUnavailable("python3 is not installed in this sandbox")
            output = await _run([python, "-c", _PYTHON_PACKAGES], PACKAGES_TIMEOUT)
            packages = []
            for line in output.splitlines():
                name, _sep, version = line.partition("==")
                if name:
                    packages.append({"name": name, "version": version})
            return PackageListing("python", packages)
        npm = await _which("npm", path)
        if npm is None:
            raise ListingToolUnavailable("npm is not installed in this sandbox")
        output = await _run([npm, "ls", "-g", "--depth=0", "--json"], PACKAGES_TIMEOUT, check=False)
        try:
            tree = json.loads(output or "{}")
        except json.JSONDecodeError:
            raise ListingToolUnavailable("npm ls returned output that is not JSON") from None
        dependencies = tree.get("dependencies") or {}
        return PackageListing(
            "nodejs",
            [{"name": name, "version": str(info.get("version", ""))} for name, info in sorted(dependencies.items())],
        )

    # --- skills

    async def load_skill(self, name: str | None = None) -> str:
        """No name: the skills list; a name: that skill's SKILL.md (see :func:`skills.load_skill`)."""
        return await load_skill(self.settings.skills_path, name)

    def skill_names(self) -> list[str]:
        """The installed skills right now (one directory read: what ``sandbox_load_skill`` names)."""
        return skill_names(self.settings.skills_path)

    def on_skills_change(self, listener: Callable[[], Awaitable[None]]) -> None:
        """Await ``listener`` after skills are registered, deleted or cleared here."""
        self._skill_listeners.append(listener)

    async def register_skills(self, data: bytes | None, path: str | None, name: str | None) -> list[SkillInfo]:
        """Install an archive's or a folder's skills (see :func:`skills.register_skills`)."""
        installed = await register_skills(self.settings.skills_path, data, path, name)
        await self._skills_changed()
        return installed

    async def delete_skill(self, name: str) -> SkillInfo:
        removed = await delete_skill(self.settings.skills_path, name)
        await self._skills_changed()
        return removed

    async def clear_skills(self) -> list[str]:
        removed = await clear_skills(self.settings.skills_path)
        if removed:
            await self._skills_changed()
        return removed

    async def _skills_changed(self) -> None:
        for listener in self._skill_listeners:
            await listener()

    # --- capabilities

    async def capabilities(
        self, browser_status: BrowserStatus | None = None, refresh: bool = False
    ) -> CapabilityReport:
        """Which planes are up right now, the browser as ``browser_status`` (else the plane's own
        probe) reports it; cached for 5 s unless ``refresh``."""
        return await self._capabilities.report(browser_status or self.browser_status, refresh)


async def _run(args: list[str], limit: float, check: bool = True) -> str:
    """Run a probe in its own process group with the sandbox's environment; kill it on timeout."""
    try:
        returncode, stdout, stderr = await run_bounded(args, limit)
    except TimeoutError:
        raise ListingToolUnavailable(f"{os.path.basename(args[0])} did not answer within {limit:g}s") from None
    if check and returncode != 0:
        detail = stderr.decode(errors="replace").strip().splitlines()
        raise ListingToolUnavailable(f"{os.path.basename(args[0])} failed: {detail[-1] if detail else returncode}")
    return stdout.decode(errors="replace")


async def _which(name: str, path: str | None) -> str | None:
    return await anyio.to_thread.run_sync(functools.partial(shutil.which, name, path=path))


async def _probe_version(binary: str, args: list[str]) -> str | None:
    """``Python 3.11.2`` / ``v20.1.0`` -> ``3.11.2`` / ``20.1.0``; None when the probe fails."""
    try:
        output = await _run([binary, *args], PROBE_TIMEOUT)
    except (ListingToolUnavailable, OSError):
        return None
    match = re.search(r"(\d+(?:\.\d+)+)", output)
    return match.group(1) if match else (output.strip() or None)
