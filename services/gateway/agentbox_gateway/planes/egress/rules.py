"""The browser's proxy settings as typed values: the upstream proxy (credentials kept here, shown
only masked), mappings (a host pattern served by a local port) and excludes (hosts and networks
that connect directly), each parsed from the text the REST door receives, and the one routing
decision the PAC file, the forwarder and ``diagnose`` all follow."""

from __future__ import annotations

import fnmatch
import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from .errors import ProxySettingError

#: What a password looks like in every answer.
MASK = "****"
_HOST_PATTERN = re.compile(r"^(\*|\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)*$|^\*$")
_HOST = re.compile(r"^[a-z0-9-]+(\.[a-z0-9-]+)*$")
_SLASHES = re.compile(r"/{2,}")
_DOMAIN_EXCLUDE = re.compile(r"^(\*\.|\.)?[a-z0-9-]+(\.[a-z0-9-]+)*$")


@dataclass(frozen=True)
class Upstream:
    """An HTTP proxy the browser's traffic goes through."""

    host: str
    port: int
    username: str | None = None
    password: str | None = None

    @property
    def addr(self) -> str:
        return f"{_bracketed(self.host)}:{self.port}"

    @property
    def url(self) -> str:
        """``http://host:port`` without credentials (they travel as ``Proxy-Authorization``)."""
        return f"http://{self.addr}"

    @property
    def masked(self) -> str:
        """The setting as shown to callers: ``http://user:****@host:port``."""
        if self.username is None:
            return self.url
        secret = f":{MASK}" if self.password is not None else ""
        return f"http://{self.username}{secret}@{self.addr}"

    def with_credentials(self, username: str, password: str) -> Upstream:
        return Upstream(self.host, self.port, username, password)


@dataclass(frozen=True)
class Mapping:
    """Requests for ``host`` (a pattern, ``*`` any characters), optionally only on ``port``, for
    ``scheme`` or under ``path``, served by ``target_host:target_port`` (``target_path`` prefixed)."""

    source: str
    target: str
    host: str
    scheme: str | None
    port: int | None
    path: str | None
    target_host: str
    target_port: int
    target_path: str

    def matches(self, scheme: str, host: str, port: int, path: str | None) -> bool:
        """``path`` None: a tunnel (CONNECT), whose path cannot be seen, so only path-less mappings apply."""
        if not fnmatch.fnmatchcase(host, self.host):
            return False
        if self.port is not None and port != self.port:
            return False
        if self.scheme is not None and scheme != self.scheme:
            return False
        if self.path is None:
            return True
        return path is not None and (path == self.path or path.startswith(self.path.rstrip("/") + "/"))

    def rewrite(self, path: str) -> str:
        """The path the target sees: the source's path prefix replaced by the target's."""
        rest = path[len(self.path.rstrip("/")) :] if self.path else path
        if not rest.startswith("/"):
            rest = "/" + rest
        return (self.target_path.rstrip("/") + rest) if self.target_path else rest

    @property
    def resolved(self) -> str:
        return f"{_bracketed(self.target_host)}:{self.target_port}{self.target_path}"

    def target_url(self, path: str) -> str:
        return f"http://{_bracketed(self.target_host)}:{self.target_port}{self.rewrite(path)}"


@dataclass(frozen=True)
class Exclude:
    """A bypass pattern: host patterns (shell-style) or a network of IP addresses."""

    pattern: str
    hosts: tuple[str, ...] = ()
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None

    def matches(self, host: str) -> bool:
        if self.network is not None:
            try:
                return ipaddress.ip_address(host) in self.network
            except ValueError:
                return False
        return any(fnmatch.fnmatchcase(host, pattern) for pattern in self.hosts)


def same_source(first: str, second: str) -> bool:
    """Whether two mapping sources name the same mapping: repeated slashes count as one, since a source
    sent in a URL path (``DELETE /v1/proxy/mappings/https://…``) may arrive with ``//`` merged."""
    return _SLASHES.sub("/", first.strip()) == _SLASHES.sub("/", second.strip())


def parse_upstream(server: str) -> Upstream:
    """``host:port``, ``user:pass@host:port``, optionally ``http://`` in front (``%``-escapes allowed
    in the credentials). Only HTTP proxies: the forwarder speaks HTTP to them."""
    text = server.strip()
    if not text:
        raise ProxySettingError("server must not be empty")
    if "://" not in text:
        text = f"http://{text}"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ProxySettingError(f"server is not host:port: {exc}") from None
    if parts.scheme.lower() != "http":
        raise ProxySettingError(f"only http:// upstream proxies are supported, not {parts.scheme}://")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ProxySettingError("server must be [user:pass@]host:port, without a path")
    host = (parts.hostname or "").lower()
    if not host or port is None or port == 0:
        raise ProxySettingError("server must name a host and a port (host:port)")
    _check_host(host, "server")
    username = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password) if parts.password is not None else None
    if username == "":
        raise ProxySettingError("server has an empty user name")
    return Upstream(host, port, username, password)


def parse_credentials(text: str) -> tuple[str, str]:
    """``username:password`` (as ``auth_cmd`` prints it)."""
    username, colon, password = text.strip().partition(":")
    if not username or not colon:
        raise ProxySettingError("auth_cmd must print username:password")
    return username, password


def parse_mapping(source: str, target: str) -> Mapping:
    """``source`` ``[scheme://]host[:port][/path]`` (``*`` in the host), ``target`` ``[host:]port[/path]``
    (host 127.0.0.1 unless given)."""
    raw = source.strip()
    scheme: str | None = None
    if "://" in raw:
        scheme, raw = raw.split("://", 1)
        scheme = scheme.lower()
        if scheme not in ("http", "https"):
            raise ProxySettingError(f"source scheme must be http or https, not {scheme!r}")
    authority, slash, path = raw.partition("/")
    host, port = _host_port(authority.lower(), "source", required=False)
    if not _HOST_PATTERN.match(host):
        raise ProxySettingError(f"source host {host!r} is not a host name or a *.pattern")
    target_text = target.strip()
    if target_text.lower().startswith("http://"):
        target_text = target_text[len("http://") :]
    target_authority, target_slash, target_path = target_text.partition("/")
    if ":" not in target_authority:
        target_authority = f":{target_authority}"
    target_host, target_port = _host_port(target_authority.lower(), "target", required=True)
    target_host = target_host or "127.0.0.1"
    _check_host(target_host, "target")
    _check_path(path, "source")
    _check_path(target_path, "target")
    assert target_port is not None
    return Mapping(
        source=source.strip(),
        target=target.strip(),
        host=host,
        scheme=scheme,
        port=port,
        path=f"/{path}" if slash and path else None,
        target_host=target_host,
        target_port=target_port,
        target_path=f"/{target_path}".rstrip("/") if target_slash and target_path else "",
    )


def parse_exclude(pattern: str) -> Exclude:
    """A domain (``example.com`` itself, ``*.example.com`` its subdomains, ``.example.com`` both), an
    IP address or a network (``10.0.0.0/8``, ``fd00::/8``)."""
    text = pattern.strip().lower()
    if not text:
        raise ProxySettingError("pattern must not be empty")
    try:
        return Exclude(pattern.strip(), network=ipaddress.ip_network(text.strip("[]"), strict=False))
    except ValueError:
        pass
    if not _DOMAIN_EXCLUDE.match(text):
        raise ProxySettingError(f"pattern {pattern!r} is not a domain, *.domain, .domain or network")
    if text.startswith("."):
        return Exclude(pattern.strip(), hosts=(text[1:], f"*{text}"))
    return Exclude(pattern.strip(), hosts=(text,))


def split_url(url: str) -> tuple[str, str, int, str]:
    """``(scheme, host, port, path?query)`` of an absolute http(s) URL."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ProxySettingError(f"url is not a URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ProxySettingError("url must be an absolute http:// or https:// URL")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return scheme, parts.hostname.lower(), port or (443 if scheme == "https" else 80), path


def _host_port(authority: str, what: str, required: bool) -> tuple[str, int | None]:
    host, colon, port_text = authority.rpartition(":") if ":" in authority else (authority, "", "")
    if not colon:
        if required:
            raise ProxySettingError(f"{what} needs a port")
        return host, None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ProxySettingError(f"{what} port {port_text!r} is not a number from 1 to 65535")
    return host, int(port_text)


def _check_host(host: str, what: str) -> None:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return
    except ValueError:
        pass
    if not _HOST.match(host):
        raise ProxySettingError(f"{what} host {host!r} is not a host name or an IP address")


def _check_path(path: str, what: str) -> None:
    """A path goes into a request line: no spaces, no control characters."""
    if any(char.isspace() or ord(char) < 32 or ord(char) == 127 for char in path):
        raise ProxySettingError(f"{what} path must not contain spaces or control characters")


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


@dataclass(frozen=True)
class Route:
    """Where one request goes: ``mapping`` (to a local port), ``proxy`` (the upstream) or ``direct``."""

    kind: str
    mapping: Mapping | None = None


@dataclass(frozen=True)
class ProxyConfig:
    """All the settings at one moment; replaced whole on a change, so a refused change leaves it as it was.
    Mappings come first, then excludes, then the upstream (when set) for everything else."""

    upstream: Upstream | None = None
    mappings: tuple[Mapping, ...] = ()
    excludes: tuple[Exclude, ...] = ()

    def route(self, scheme: str, host: str, port: int, path: str | None) -> Route:
        host = host.lower().strip("[]")
        for mapping in self.mappings:
            if mapping.matches(scheme, host, port, path):
                return Route("mapping", mapping)
        if any(exclude.matches(host) for exclude in self.excludes):
            return Route("direct")
        return Route("proxy") if self.upstream is not None else Route("direct")
