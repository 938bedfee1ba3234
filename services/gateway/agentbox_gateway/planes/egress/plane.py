"""The egress plane: the browser's outbound proxy (its upstream proxy, mappings and excludes), for
the gateway's lifetime (in memory, as AIO keeps them). Chromium reads them as a PAC file from the local forwarder
(``--proxy-pac-url``); after every change the plane makes Chromium read it again and waits until it
has, so the next page load follows the new settings without a browser restart. ``diagnose`` fetches
a URL the way the settings route it and says how that went."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, replace

import httpx

from agentbox_common.http import verified_tls
from agentbox_common.processes import run_bounded

from ..browser import BrowserError, BrowserPlane, BrowserUnavailable
from .errors import ProxyEntryNotFound, ProxySettingError, ProxyUnavailable
from .forwarder import Forwarder
from .pac import build_pac
from .rules import (
    MASK,
    Mapping,
    ProxyConfig,
    Upstream,
    parse_credentials,
    parse_exclude,
    parse_mapping,
    parse_upstream,
    same_source,
    split_url,
)

logger = logging.getLogger(__name__)

AUTH_CMD_TIMEOUT = 10.0
DIAGNOSE_TIMEOUT = 10.0
#: How long Chromium may take to fetch the PAC file again after being told to.
APPLY_TIMEOUT = 5.0


@dataclass(frozen=True)
class UpstreamInfo:
    """The upstream as callers see it: the password never, only ``****``."""

    addr: str
    server: str
    username: str | None
    password: str | None

    @classmethod
    def of(cls, upstream: Upstream) -> UpstreamInfo:
        password = MASK if upstream.password is not None else None
        return cls(upstream.addr, upstream.masked, upstream.username, password)


@dataclass(frozen=True)
class MappingInfo:
    source: str
    target: str
    source_host: str
    source_path: str | None
    internal_port: int
    resolved_target: str


@dataclass(frozen=True)
class Applied:
    """Whether Chromium has read the new settings (False: it is not running or not using the PAC file)."""

    browser: bool
    reason: str = ""


@dataclass(frozen=True)
class Diagnosis:
    url: str
    route: str
    matched_mapping: MappingInfo | None
    resolved_target: str
    target_reachable: bool
    status_code: int | None
    latency_ms: float
    error: str | None


class ProxyPlane:
    def __init__(self, port: int, browser: BrowserPlane) -> None:
        self._port = port
        self._browser = browser
        self._config = ProxyConfig()
        self._forwarder = Forwarder(lambda: self._config, self._serve_pac)
        #: Set when Chromium fetches the PAC file (armed by a change that waits for it).
        self._pac_fetched: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self.problem = "not started"

    async def start(self) -> None:
        """Listen for Chromium; a port in use is logged and the routes answer 503 (the gateway still runs)."""
        try:
            await self._forwarder.start(self._port)
        except OSError as exc:
            self.problem = f"the browser proxy cannot listen on 127.0.0.1:{self._port}: {exc.strerror or exc}"
            logger.error("%s (AGENTBOX_BROWSER_PROXY_PORT)", self.problem)
            return
        self.problem = ""

    async def aclose(self) -> None:
        await self._forwarder.aclose()

    @property
    def pac_url(self) -> str:
        """Where Chromium reads the PAC file (``AGENTBOX_PROXY_PAC_URL`` of the browser program)."""
        return f"http://{self._forwarder.address}/proxy.pac"

    def pac(self) -> str:
        return build_pac(self._config, self._forwarder.address)

    def _serve_pac(self) -> str:
        if self._pac_fetched is not None:
            self._pac_fetched.set()
        return self.pac()

    # -- upstream -------------------------------------------------------------------------------

    def upstream(self) -> UpstreamInfo | None:
        upstream = self._config.upstream
        return UpstreamInfo.of(upstream) if upstream else None

    async def set_upstream(self, server: str, auth_cmd: str | None = None) -> tuple[UpstreamInfo, Applied]:
        """Parse ``server`` (``[user:pass@]host:port``); ``auth_cmd`` prints ``user:pass`` to use instead."""
        upstream = parse_upstream(server)
        if auth_cmd is not None and auth_cmd.strip():
            upstream = upstream.with_credentials(*await _run_auth_cmd(auth_cmd))
        applied = await self._change(replace(self._config, upstream=upstream))
        return UpstreamInfo.of(upstream), applied

    async def remove_upstream(self) -> Applied:
        return await self._change(replace(self._config, upstream=None))

    # -- mappings -------------------------------------------------------------------------------

    def mappings(self) -> list[MappingInfo]:
        return [self._mapping_info(mapping) for mapping in self._config.mappings]

    async def add_mapping(self, source: str, target: str) -> tuple[MappingInfo, Applied]:
        """Add, or replace the one with the same source."""
        mapping = parse_mapping(source, target)
        kept = tuple(m for m in self._config.mappings if not same_source(m.source, mapping.source))
        applied = await self._change(replace(self._config, mappings=(*kept, mapping)))
        return self._mapping_info(mapping), applied

    async def remove_mapping(self, source: str) -> tuple[MappingInfo, Applied]:
        found = next((m for m in self._config.mappings if same_source(m.source, source)), None)
        if found is None:
            raise ProxyEntryNotFound(f"no mapping for source {source!r}")
        kept = tuple(m for m in self._config.mappings if m is not found)
        return self._mapping_info(found), await self._change(replace(self._config, mappings=kept))

    def _mapping_info(self, mapping: Mapping) -> MappingInfo:
        return MappingInfo(
            mapping.source, mapping.target, mapping.host, mapping.path, self._forwarder.port, mapping.resolved
        )

    # -- excludes -------------------------------------------------------------------------------

    def excludes(self) -> list[str]:
        return [exclude.pattern for exclude in self._config.excludes]

    async def add_exclude(self, pattern: str) -> Applied:
        exclude = parse_exclude(pattern)
        if exclude.pattern in self.excludes():
            return Applied(True, "already excluded")
        return await self._change(replace(self._config, excludes=(*self._config.excludes, exclude)))

    async def remove_exclude(self, pattern: str) -> Applied:
        kept = tuple(e for e in self._config.excludes if e.pattern != pattern.strip())
        if len(kept) == len(self._config.excludes):
            raise ProxyEntryNotFound(f"{pattern!r} is not excluded")
        return await self._change(replace(self._config, excludes=kept))

    # -- applying -------------------------------------------------------------------------------

    async def _change(self, config: ProxyConfig) -> Applied:
        """Make ``config`` current, then have Chromium fetch the PAC file again and wait until it did."""
        if self.problem:
            raise ProxyUnavailable(self.problem)
        async with self._lock:
            self._config = config
            self._pac_fetched = fetched = asyncio.Event()
            try:
                if not await self._browser.reload_proxy_settings(fetched, APPLY_TIMEOUT):
                    return Applied(
                        False,
                        f"Chromium did not fetch {self.pac_url}: is it started with "
                        "--proxy-pac-url (AGENTBOX_PROXY_PAC_URL)?",
                    )
            except (BrowserUnavailable, BrowserError) as exc:
                return Applied(False, f"the browser reads the settings when it starts ({exc})")
            finally:
                self._pac_fetched = None
            return Applied(True)

    # -- diagnose -------------------------------------------------------------------------------

    async def diagnose(self, url: str) -> Diagnosis:
        """Fetch ``url`` (GET, no redirects) as the settings route it: through the upstream, to the
        mapped port, or directly; its status and latency, or why it could not be reached."""
        scheme, host, port, path = split_url(url)
        config = self._config
        route = config.route(scheme, host, port, path)
        mapping = route.mapping
        headers: dict[str, str] = {}
        proxy: httpx.Proxy | None = None
        target_url = url.strip()
        if mapping is not None:
            target_url = mapping.target_url(path)
            headers["Host"] = host if port in (80, 443) else f"{host}:{port}"
            resolved = mapping.resolved
        elif route.kind == "proxy" and config.upstream is not None:
            upstream = config.upstream
            auth = (upstream.username, upstream.password or "") if upstream.username is not None else None
            proxy = httpx.Proxy(upstream.url, auth=auth)
            resolved = upstream.addr
        else:
            resolved = f"{host}:{port}"
        started = time.monotonic()
        status: int | None = None
        error: str | None = None
        try:
            async with httpx.AsyncClient(
                proxy=proxy, trust_env=False, timeout=DIAGNOSE_TIMEOUT, verify=verified_tls(), follow_redirects=False
            ) as client:
                async with client.stream("GET", target_url, headers=headers) as response:
                    status = response.status_code
        except httpx.ProxyError as exc:
            error = f"the upstream proxy refused: {_scrub(str(exc), config.upstream)}"
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {_scrub(str(exc), config.upstream) or 'no answer'}"
        latency = round((time.monotonic() - started) * 1000, 1)
        return Diagnosis(
            url=url.strip(),
            route=route.kind,
            matched_mapping=self._mapping_info(mapping) if mapping else None,
            resolved_target=resolved,
            target_reachable=status is not None,
            status_code=status,
            latency_ms=latency,
            error=error,
        )


def _scrub(text: str, upstream: Upstream | None) -> str:
    """``text`` with the upstream's password replaced by ``****`` (an error message may quote a URL)."""
    if upstream is not None and upstream.password:
        text = text.replace(upstream.password, MASK)
    return text


async def _run_auth_cmd(command: str) -> tuple[str, str]:
    """Run ``auth_cmd`` (bash, the sandbox's environment); its output is a secret: never logged or quoted."""
    try:
        returncode, output, _ = await run_bounded(["bash", "-c", command], AUTH_CMD_TIMEOUT)
    except TimeoutError:
        raise ProxySettingError(f"auth_cmd did not finish within {AUTH_CMD_TIMEOUT:g} s") from None
    if returncode != 0:
        raise ProxySettingError(f"auth_cmd failed with exit code {returncode}")
    return parse_credentials(output.decode(errors="replace"))
