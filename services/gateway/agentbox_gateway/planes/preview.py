"""The preview plane: what an app serving on a port inside the sandbox looks like from outside,
on a preview origin of its own (``http://{port}.localhost:<gateway port>/``, or ``AIO_PREVIEW_HOST``
such as ``{port}-preview.example.com``) or through the gateway's ``/proxy/{port}/`` (prefix
stripped) and ``/absproxy/{port}/`` (path kept).

It owns the connection pool to the apps (kept-alive connections reused), decides which request
headers reach an app (never the gateway's key or its own cookies, whose names the gateway hands the
plane; ``X-Forwarded-*`` set) and which response headers come back (hop-by-hop ones dropped,
``Location`` put back under the prefix, no ``Set-Cookie`` of the gateway's own cookies), and turns
"nothing there" and "no answer" into typed errors. Bodies pass through as async iterators of bytes:
nothing is read whole."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import unquote_plus, urlsplit, urlunsplit

from agentbox_common.errors import Invalid, TimedOut, Unavailable
from agentbox_common.hosts import is_loopback_name
from agentbox_common.keys import is_digest, key_matches

from ..settings import GatewaySettings

if TYPE_CHECKING:  # imported where used: a gateway nobody previews through never loads aiohttp (nor yarl)
    import aiohttp
    from yarl import URL

T = TypeVar("T")

#: ``AIO_PREVIEW_HOST``'s placeholder, and the preview host form every gateway serves.
PORT_PLACEHOLDER = "{port}"
LOCAL_PREVIEW_HOST = "{port}.localhost"
#: Added to every answer of ``/proxy/`` and ``/absproxy/`` (the gateway's own origin): a page served
#: there runs in an opaque origin (no ``allow-same-origin``), so its requests carry ``Origin: null``
#: and never act with the person's credentials. A separate header: policies combine, the app's stay.
SANDBOX_POLICY = b"sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads"
#: Loopback connects either succeed at once or are refused; anything longer is a stuck sandbox.
CONNECT_TIMEOUT = 5.0
#: How much of an app's answer is read ahead per connection (reading pauses beyond twice this):
#: large enough that a download moves in few, big pieces, small enough to keep memory flat.
READ_BUFFER = 256 * 1024
#: Apps are tried on IPv4 loopback first, then IPv6 (dev servers bound to ``localhost`` may be ::1 only).
_LOOPBACKS = ("127.0.0.1", "[::1]")
_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
_HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"expect",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
#: Request headers the gateway sets itself (or aiohttp does: ``host``, the WebSocket handshake).
_REPLACED = frozenset(
    {
        b"host",
        b"x-forwarded-for",
        b"x-forwarded-proto",
        b"x-forwarded-host",
        b"x-forwarded-prefix",
    }
)
_HANDSHAKE = frozenset(
    {
        b"sec-websocket-key",
        b"sec-websocket-version",
        b"sec-websocket-extensions",
        b"sec-websocket-protocol",
    }
)
#: The gateway's server adds its own ``date`` and ``server``; the app's would be sent twice.
_SERVER_SET = frozenset({b"date", b"server"})
_NOTHING_THERE = "Nothing is listening on port {port} in the sandbox: start the app there (on 127.0.0.1 or ::1) first"


class PreviewError(Invalid):
    """A request the proxy cannot pass on; the message says why."""


class InvalidPort(PreviewError):
    """Not a number in 1-65535."""


class OwnPort(PreviewError):
    """The gateway's own port: proxying it would loop."""


class InvalidPath(PreviewError):
    """A path that makes no URL."""


class AppUnreachable(Unavailable, PreviewError):
    """Nothing listens on the port, or the app broke the exchange off."""


class AppTimeout(TimedOut, PreviewError): ...


@dataclass(frozen=True)
class Caller:
    """How the caller reaches the gateway (from ``X-Forwarded-*``/``Host``) and where it comes from."""

    proto: str
    host: str
    #: The path the gateway itself sits under (an outer proxy's ``X-Forwarded-Prefix``), or "".
    prefix: str
    client: str | None


@dataclass(frozen=True)
class Target:
    """One proxied request: the app's port, the raw path and query it is sent, and the public path
    the app's root is reached under (``/proxy/{port}``, or "" for ``/absproxy/``)."""

    port: int
    path: bytes
    query: bytes
    mount: str


@dataclass
class AppResponse:
    """An app's answer: status, the headers to send back, and its body as it arrives."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: AsyncIterator[bytes]
    _response: aiohttp.ClientResponse

    @property
    def arrived(self) -> bool:
        """The whole body is already here (a small answer): sending it on needs no waiting."""
        return self._response.content.is_eof()

    def release(self) -> None:
        """Hand the connection back to the pool (or close it when the body was not read to the end)."""
        if self._response.content.at_eof():
            self._response.release()
        else:
            self._response.close()


def parse_port(text: str, own_ports: Iterable[int]) -> int:
    """The port of ``/proxy/{text}/``: a number in 1-65535 that is not the gateway's own."""
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 65535:
        raise InvalidPort(f"Invalid port {text[:20]!r}: a preview port is a number from 1 to 65535")
    port = int(text)
    if port in own_ports:
        raise OwnPort(f"Port {port} is the gateway's own port; it cannot be proxied to itself")
    return port


def preview_url(base: str, port: int, absolute: bool = False) -> str:
    """``<base>/proxy/<port>/`` (or ``/absproxy/``) where ``base`` is the gateway as the caller sees it."""
    return f"{base.rstrip('/')}/{'absproxy' if absolute else 'proxy'}/{port}/"


@dataclass(frozen=True)
class PreviewHosts:
    """The host names previews are served on: ``{port}.localhost`` always, and ``pattern``
    (``AIO_PREVIEW_HOST``, a host name with ``{port}`` in it, optionally ``:port``) when set."""

    pattern: str = ""

    @property
    def _forms(self) -> tuple[tuple[str, str], ...]:
        names = [LOCAL_PREVIEW_HOST, self.pattern.partition(":")[0].lower()] if self.pattern else [LOCAL_PREVIEW_HOST]
        return tuple((name.partition(PORT_PLACEHOLDER)[0], name.partition(PORT_PLACEHOLDER)[2]) for name in names)

    def port_of(self, host: str) -> int | None:
        """The port a ``Host`` value previews (its own port part ignored), or None: not a preview host."""
        name = host.strip().lower().partition(":")[0].rstrip(".")
        for before, after in self._forms:
            digits = name[len(before) : len(name) - len(after)]
            if (
                name.startswith(before)
                and name.endswith(after)
                and 0 < len(digits) <= 5
                and digits.isascii()
                and digits.isdigit()
            ):
                return int(digits)
        return None

    def origin_url(self, base: str, port: int) -> str | None:
        """The preview origin of ``port`` for a caller who reaches the gateway at ``base``: on a
        loopback host (no prefix) ``{port}.localhost`` on the same port; else the pattern with the
        caller's scheme; None when neither applies (a remote caller and no pattern)."""
        parts = urlsplit(base)
        if is_loopback_name(parts.hostname) and not parts.path.strip("/"):
            return f"{parts.scheme}://{port}.localhost{f':{parts.port}' if parts.port else ''}/"
        if self.pattern:
            return f"{parts.scheme}://{self.pattern.replace(PORT_PLACEHOLDER, str(port))}/"
        return None


def preview_links(ports: Iterable[int], base: str, hosts: PreviewHosts | None = None) -> list[dict[str, object]]:
    """Preview URLs of the apps' ports (:func:`.context.ports.app_ports`), for the context plane:
    ``preview_url`` is the one for a person's browser (the preview origin, or the path form when the
    caller has none), ``url`` and ``absproxy_url`` the path forms (for programs; in a browser they
    run sandboxed)."""
    hosts = hosts or PreviewHosts()
    links: list[dict[str, object]] = []
    for port in ports:
        url = preview_url(base, port)
        links.append(
            {
                "port": port,
                "url": url,
                "absproxy_url": preview_url(base, port, True),
                "preview_url": hosts.origin_url(base, port) or url,
            }
        )
    return links


def without_key(query: bytes, key: str) -> bytes:
    """The raw query with every parameter carrying ``key`` removed (the rest byte for byte); with
    only the key's digest, every parameter whose value is the key."""
    if not key or not query:
        return query
    pieces = query.split(b"&")
    if is_digest(key):
        kept = [p for p in pieces if not key_matches(unquote_plus(p.decode("latin-1")).partition("=")[2], key)]
    else:
        kept = [p for p in pieces if key not in unquote_plus(p.decode("latin-1"))]
    return query if len(kept) == len(pieces) else b"&".join(kept)


def _without_cookies(value: str, names: frozenset[str]) -> str:
    return "; ".join(
        pair for pair in value.split(";") if pair.strip().split("=", 1)[0].strip() not in names and pair.strip()
    )


def request_headers(
    headers: Iterable[tuple[bytes, bytes]],
    caller: Caller,
    target: Target,
    key: str,
    own_cookies: frozenset[str],
    websocket: bool = False,
) -> list[tuple[str, str]]:
    """The caller's headers as the app gets them: hop-by-hop ones and any value carrying the gateway's
    key dropped, the gateway's ``own_cookies`` removed, ``X-Forwarded-For/-Proto/-Host/-Prefix`` set."""
    forwarded_for = ""
    out: list[tuple[str, str]] = []
    for raw_name, raw_value in headers:
        if raw_name in _HOP_BY_HOP or raw_name in _REPLACED or (websocket and raw_name in _HANDSHAKE):
            if raw_name == b"x-forwarded-for":
                forwarded_for = raw_value.decode("latin-1")
            continue
        value = raw_value.decode("latin-1")
        if key and key in value:
            continue
        if raw_name == b"cookie" and any(name in value for name in own_cookies):
            value = _without_cookies(value, own_cookies)
            if not value:
                continue
        out.append((raw_name.decode("latin-1"), value))
    if caller.client:
        forwarded_for = f"{forwarded_for}, {caller.client}" if forwarded_for else caller.client
    if forwarded_for:
        out.append(("X-Forwarded-For", forwarded_for))
    out += [("X-Forwarded-Proto", caller.proto), ("X-Forwarded-Host", caller.host)]
    prefix = caller.prefix + target.mount
    if prefix:
        out.append(("X-Forwarded-Prefix", prefix))
    return out


def rewrite_location(value: str, target: Target, outer_prefix: str) -> str:
    """A redirect back under the prefix: a path (``/login``) or an absolute URL to the app itself
    (``http://127.0.0.1:3000/login``) becomes ``<outer prefix><mount>/login``; others are kept."""
    parts = urlsplit(value)
    if parts.scheme or parts.netloc:
        with contextlib.suppress(ValueError):
            if parts.hostname in _LOOPBACK_NAMES and parts.port == target.port:
                path = urlunsplit(("", "", parts.path or "/", parts.query, parts.fragment))
                return outer_prefix + target.mount + path
        return value
    if value.startswith("/"):
        return outer_prefix + target.mount + value
    return value


def response_headers(
    raw: Iterable[tuple[bytes, bytes]], target: Target, outer_prefix: str, own_cookies: frozenset[str]
) -> list[tuple[bytes, bytes]]:
    """The app's headers as the caller gets them (see :func:`rewrite_location`); an app's
    ``Set-Cookie`` of one of the gateway's ``own_cookies`` is dropped so it cannot overwrite it."""
    out = []
    for name, value in raw:
        lowered = name.lower()
        if lowered in _HOP_BY_HOP or lowered in _SERVER_SET:
            continue
        if lowered == b"location":
            value = rewrite_location(value.decode("latin-1"), target, outer_prefix).encode("latin-1")
        elif lowered == b"set-cookie" and value.split(b"=", 1)[0].strip().decode("latin-1") in own_cookies:
            continue
        out.append((lowered, value))
    return out


class PreviewPlane:
    def __init__(self, settings: GatewaySettings, own_cookies: Iterable[str]) -> None:
        self.timeout = settings.proxy_timeout
        self.key = settings.api_key
        #: The names of the gateway's own cookies (its session, the preview cookie): never an app's.
        self.own_cookies = frozenset(own_cookies)
        self._session: aiohttp.ClientSession | None = None
        #: The loopback address each port last answered on, tried first next time.
        self._answered_on: dict[int, str] = {}

    def _client(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, limit_per_host=0),
                auto_decompress=False,
                read_bufsize=READ_BUFFER,
                trust_env=False,
                skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT),
                cookie_jar=aiohttp.DummyCookieJar(),
            )
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _urls(self, target: Target, websocket: bool = False) -> list[tuple[str, URL]]:
        """The app's URL on each loopback address, the one it last answered on first."""
        from yarl import URL

        scheme = "ws" if websocket else "http"
        query = without_key(target.query, self.key)
        tail = target.path.decode("latin-1") + (f"?{query.decode('latin-1')}" if query else "")
        known = self._answered_on.get(target.port)
        hosts = sorted(_LOOPBACKS, key=lambda host: host != known)
        try:
            return [(host, URL(f"{scheme}://{host}:{target.port}{tail}", encoded=True)) for host in hosts]
        except ValueError as exc:
            raise InvalidPath(f"Invalid path for the app on port {target.port}: {exc}") from None

    async def _reach(self, target: Target, websocket: bool, attempt: Callable[[URL], Awaitable[T]], waiting: str) -> T:
        """``attempt`` on the app's loopback addresses in turn until one takes the connection,
        bounded by ``AIO_PROXY_TIMEOUT``; failures as :class:`PreviewError`."""
        import aiohttp

        last: Exception | None = None
        for host, url in self._urls(target, websocket):
            try:
                async with asyncio.timeout(self.timeout):
                    result = await attempt(url)
            except aiohttp.ClientConnectorError as exc:  # nothing on this address: try the next
                last = exc
                continue
            except TimeoutError:
                raise AppTimeout(
                    f"The app on port {target.port} did not {waiting} within {self.timeout:g}s (AIO_PROXY_TIMEOUT)"
                ) from None
            except aiohttp.WSServerHandshakeError as exc:
                raise AppUnreachable(
                    f"The app on port {target.port} refused the WebSocket upgrade (HTTP {exc.status})"
                ) from exc
            except aiohttp.ClientError as exc:
                raise AppUnreachable(f"The app on port {target.port} failed: {type(exc).__name__}: {exc}") from exc
            self._answered_on[target.port] = host
            return result
        raise AppUnreachable(_NOTHING_THERE.format(port=target.port)) from last

    async def open(
        self,
        method: str,
        target: Target,
        headers: list[tuple[str, str]],
        body: Callable[[], AsyncIterable[bytes]] | None,
        outer_prefix: str,
    ) -> AppResponse:
        """Send the request to the app and wait for its headers. ``body`` makes the request body's
        iterator; it is made again only when no connection could be opened, so nothing was read yet."""

        def send(url: URL) -> Awaitable[aiohttp.ClientResponse]:
            data = body() if body else None
            return self._client().request(method, url, headers=headers, data=data, allow_redirects=False, compress=None)

        response = await self._reach(target, False, send, "answer")
        return AppResponse(
            response.status,
            response_headers(response.raw_headers, target, outer_prefix, self.own_cookies),
            response.content.iter_any(),
            response,
        )

    async def connect_socket(
        self, target: Target, headers: list[tuple[str, str]], protocols: list[str]
    ) -> aiohttp.ClientWebSocketResponse:
        """Open the app's WebSocket, offering the caller's subprotocols (``.protocol`` is the chosen one)."""
        import aiohttp

        def upgrade(url: URL) -> Awaitable[aiohttp.ClientWebSocketResponse]:
            return self._client().ws_connect(
                url,
                protocols=protocols,
                headers=headers,
                max_msg_size=0,
                compress=0,
                timeout=aiohttp.ClientWSTimeout(ws_close=5.0),
            )

        return await self._reach(target, True, upgrade, "accept the WebSocket")
