"""The page plane: typed page operations on the shared browser context (navigate, act, read, tabs,
cookies, network, storage state, CAPTCHA), for the gateway's ``/v1/browser/*`` page routes. They run
here, beside the MCP tools, on the same :class:`BrowserSession` and the same helpers, so a page has
one current tab and one behaviour whichever door drives it."""

from .errors import PageError
from .operations import OPERATIONS

__all__ = ["OPERATIONS", "PageError"]
