"""The sandbox's capabilities ("planes"): plain async modules with typed inputs, results and
errors. The MCP tools and the REST routes are thin doors over these; a behaviour lives here once."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..settings import GatewaySettings
from .browser import BrowserPlane
from .browser.launch import BrowserLauncher
from .browser.page import PagePlane
from .computer import ComputerPlane
from .context import ContextPlane
from .egress import ProxyPlane
from .files import ConvertPlane, EditorPlane, FilePlane, FileWatchPlane
from .hooks import HookPlane
from .preview import PreviewPlane
from .shell import ShellPlane

if TYPE_CHECKING:  # imported where made: the code plane is the largest, and only code calls need it
    from .code import CodePlane


@dataclass
class Planes:
    shell: ShellPlane
    files: FilePlane
    editor: EditorPlane
    context: ContextPlane
    browser: BrowserPlane
    launcher: BrowserLauncher
    page: PagePlane
    computer: ComputerPlane
    preview: PreviewPlane
    convert: ConvertPlane
    watch: FileWatchPlane
    hooks: HookPlane
    egress: ProxyPlane
    settings: GatewaySettings
    _code: CodePlane | None = field(default=None, init=False, repr=False)
    _making: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def code(self) -> CodePlane:
        """Made on first use (a code call, the REST door, a metrics scrape): its modules are the
        planes' largest, and a gateway that runs no code needs none of them. Locked, as the REST door
        is built in a worker thread."""
        if self._code is None:
            with self._making:
                if self._code is None:
                    from .code import CodePlane

                    self._code = CodePlane(self.settings)
        return self._code

    @property
    def code_session_count(self) -> int:
        """Open code sessions, without making the code plane (metrics collect once at start-up)."""
        return self._code.session_count if self._code is not None else 0

    @classmethod
    def create(
        cls, settings: GatewaySettings, *, own_cookies: Iterable[str], launcher: BrowserLauncher | None = None
    ) -> Planes:
        """``own_cookies``: the names of the gateway's own cookies, which the preview plane keeps from apps.
        ``launcher``: the browser's start (none: no browser program to wait for)."""
        files = FilePlane(settings)
        launcher = launcher or BrowserLauncher(settings.browser_start_mode, settings.browser_url, registered=False)
        browser = BrowserPlane(settings, launcher)
        page = PagePlane(settings.browser_url, launcher, timeout=settings.upstream_call_timeout)
        return cls(
            shell=ShellPlane(settings),
            files=files,
            editor=EditorPlane(files),
            context=ContextPlane(settings, browser.status),
            browser=browser,
            launcher=launcher,
            page=page,
            computer=ComputerPlane(settings, browser, page),
            preview=PreviewPlane(settings, own_cookies),
            convert=ConvertPlane(),
            watch=FileWatchPlane(settings.max_file_watchers, settings.watch_events_kept),
            hooks=HookPlane(settings.shutdown_hooks),
            egress=ProxyPlane(settings.browser_proxy_port, browser),
            settings=settings,
        )

    async def aclose(self) -> None:
        """Stop shells, interpreters and clients; each plane's ``aclose`` is idempotent."""
        for plane in (
            self.shell,
            self._code,
            self.files,
            self.editor,
            self.context,
            self.browser,
            self.page,
            self.computer,
            self.preview,
            self.convert,
            self.watch,
            self.hooks,
            self.egress,
        ):
            if plane is not None:
                await plane.aclose()
