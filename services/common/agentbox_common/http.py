"""TLS contexts for httpx clients, built once instead of per client.

httpx builds a new TLS context for every client unless it is given one, and loading the CA bundle
into it costs about 70 ms of CPU: at start-up for the clients a program keeps, on every request for
the ones it opens per request (``/cdp/json``, a run's LLM client)."""

from __future__ import annotations

import functools
import ssl

import httpx

__all__ = ["plain_http_only", "verified_tls"]


def plain_http_only() -> ssl.SSLContext:
    """The context for a client that only ever speaks plain HTTP (to 127.0.0.1): it trusts no
    certificate authority, so an ``https`` URL fails verification instead of being trusted."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


@functools.cache
def verified_tls() -> ssl.SSLContext:
    """httpx's default verifying context (its CA bundle; ``SSL_CERT_FILE``/``SSL_CERT_DIR``
    honoured), shared by every client of the process."""
    return httpx.create_ssl_context()
