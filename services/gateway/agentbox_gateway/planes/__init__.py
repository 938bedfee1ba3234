"""The sandbox's capabilities ("planes"): plain async modules with typed inputs, results and
errors. The MCP tools and the REST routes are thin doors over these; a behaviour lives here once."""

from __future__ import annotations

from dataclasses import dataclass

from ..settings import GatewaySettings
from .browser import BrowserPlane
from .browser.page import PagePlane
from .code import CodePlane
from .context import ContextPlane
from .files import ConvertPlane, EditorPlane, FilePlane, FileWatchPlane
from .hooks import HookPlane
from .preview import PreviewPlane
from .proxy import ProxyPlane
from .shell import ShellPlane


@dataclass
class Planes:
    shell: ShellPlane
    code: CodePlane
    files: FilePlane
    editor: EditorPlane
    context: ContextPlane
    browser: BrowserPlane
    page: PagePlane
    preview: PreviewPlane
    convert: ConvertPlane
    watch: FileWatchPlane
    hooks: HookPlane
    proxy: ProxyPlane

    @classmethod
    def create(cls, settings: GatewaySettings) -> Planes:
        files = FilePlane(settings)
        browser = BrowserPlane(settings)
        return cls(
            shell=ShellPlane(settings),
            code=CodePlane(settings),
            files=files,
            editor=EditorPlane(files),
            context=ContextPlane(settings, browser.status),
            browser=browser,
            page=PagePlane(settings.browser_url, timeout=settings.upstream_call_timeout),
            preview=PreviewPlane(settings),
            convert=ConvertPlane(),
            watch=FileWatchPlane(settings.max_file_watchers),
            hooks=HookPlane(settings.shutdown_hooks),
            proxy=ProxyPlane(settings.browser_proxy_port, browser),
        )

    async def aclose(self) -> None:
        """Stop shells, interpreters and clients; each plane's ``aclose`` is idempotent."""
        for plane in (
            self.shell,
            self.code,
            self.files,
            self.editor,
            self.context,
            self.browser,
            self.page,
            self.preview,
            self.convert,
            self.watch,
            self.hooks,
            self.proxy,
        ):
            await plane.aclose()
