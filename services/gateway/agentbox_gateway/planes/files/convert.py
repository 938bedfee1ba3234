"""Documents to Markdown (``/v1/util/convert_to_markdown``) with Microsoft's ``markitdown``: a file
in the sandbox (a path or ``file://`` URI) or an ``http(s)`` URL. markitdown (and the file-type model
it loads) is imported on first use, so a gateway that never converts does not pay its memory."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from agentbox_common.errors import Invalid, NotFound

#: The most a converted document may read (a URL's body or a file), to bound memory and time.
MAX_SOURCE_BYTES = 64 * 1024 * 1024


class ConvertError(Invalid):
    """The source cannot be converted (unsupported type, unreadable, fetch failed)."""


class SourceNotFound(NotFound, ConvertError): ...


@dataclass(frozen=True)
class Converted:
    markdown: str
    title: str | None


class ConvertPlane:
    def __init__(self) -> None:
        self._converter: Any = None
        self._lock = threading.Lock()

    def _markitdown(self) -> Any:
        with self._lock:
            if self._converter is None:
                from markitdown import MarkItDown

                self._converter = MarkItDown()
            return self._converter

    def _convert(self, uri: str) -> Converted:
        from markitdown import MarkItDownException

        parts = urlsplit(uri)
        if parts.scheme in ("http", "https"):
            source: str = uri
        else:
            if parts.scheme not in ("", "file"):
                raise ConvertError(f"unsupported URI scheme {parts.scheme!r}: use a path, file:// or http(s)://")
            path = Path(unquote(parts.path) if parts.scheme == "file" else uri).expanduser()
            if not path.is_file():
                raise SourceNotFound(f"no such file: {path}")
            if path.stat().st_size > MAX_SOURCE_BYTES:
                raise ConvertError(f"{path} is larger than {MAX_SOURCE_BYTES} bytes")
            source = str(path)
        try:
            result = self._markitdown().convert(source)
        except MarkItDownException as exc:
            raise ConvertError(f"cannot convert {uri}: {str(exc).splitlines()[0]}") from None
        except OSError as exc:
            raise ConvertError(f"cannot read {uri}: {exc}") from None
        except Exception as exc:  # requests' errors for URLs, and converters' own failures
            raise ConvertError(f"cannot convert {uri}: {type(exc).__name__}: {exc}") from None
        return Converted(result.markdown, result.title)

    async def convert(self, uri: str) -> Converted:
        """``uri`` as Markdown. A URI no answer could carry (not printable, lone surrogates) is refused
        before it is looked at; every other failure names the URI."""
        if not uri.isprintable() or not _utf8(uri):
            raise ConvertError("uri must be printable UTF-8 text")
        try:
            if not uri.strip():
                raise ConvertError("uri must not be empty")
            return await asyncio.to_thread(self._convert, uri.strip())
        except SourceNotFound:
            raise
        except (ConvertError, ValueError, OSError) as exc:  # a URI that is no path (surrogates, too long)
            raise ConvertError(f"cannot convert {uri!r}: {exc}") from None

    async def aclose(self) -> None:
        return None


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from a JSON string
        return False
    return True
