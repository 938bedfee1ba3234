"""The tests' plain HTTP requests, through one shared client: ``httpx.get`` and its kin build a client,
and with it a TLS context (a quarter of a second on two loaded cores), for every call.

The client pools a connection per server and keeps no cookies, so each request still carries only
the headers it is given, as a one-off ``httpx.get`` does; a response's own ``.cookies`` still read
what it set. The functions take ``httpx``'s keywords (``headers``, ``json``, ``timeout``, ...)."""

from __future__ import annotations

import functools
from contextlib import AbstractContextManager
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any

import httpx


@functools.cache
def shared_client() -> httpx.Client:
    """The one client (built on first use, kept for the test session)."""
    return httpx.Client(cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])))


def request(method: str, url: str, **kwargs: Any) -> httpx.Response:
    return shared_client().request(method, url, **kwargs)


def get(url: str, **kwargs: Any) -> httpx.Response:
    return shared_client().get(url, **kwargs)


def head(url: str, **kwargs: Any) -> httpx.Response:
    return shared_client().head(url, **kwargs)


def options(url: str, **kwargs: Any) -> httpx.Response:
    return shared_client().options(url, **kwargs)


def post(url: str, **kwargs: Any) -> httpx.Response:
    return shared_client().post(url, **kwargs)


def put(url: str, **kwargs: Any) -> httpx.Response:
    return shared_client().put(url, **kwargs)


def patch(url: str, **kwargs: Any) -> httpx.Response:
    return shared_client().patch(url, **kwargs)


def delete(url: str, **kwargs: Any) -> httpx.Response:
    return shared_client().delete(url, **kwargs)


def stream(method: str, url: str, **kwargs: Any) -> AbstractContextManager[httpx.Response]:
    return shared_client().stream(method, url, **kwargs)
