"""Files between Telegram and a chat's workspace: ``[SEND_FILE: relative/path]`` markers in an answer
(and ``/fetch``) send a workspace file, confined to that workspace and at most 50 MB; uploads are
saved there under a safe name, streamed to disk and refused beyond ``AICODEBOX_MAX_UPLOAD_BYTES``
(whatever size the Bot API declared: the bytes served count). Both go through
:mod:`~agentbox_common.workspace_files`, as the MCP file tools and ``/files`` do: a file is opened
race-free under the workspace (no symlink leads out, only regular files) and what is sent is the
file descriptor that was checked."""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO
from urllib.parse import quote, urlsplit, urlunsplit

import anyio
import httpx
from telegram import File

from agentbox_common.workspace_files import FileProblem, OpenedFile, PathEscapes, WorkspaceFiles

SEND_FILE = re.compile(r"\[SEND_FILE:\s*([^\]\n]+?)\s*\]")
#: The Bot API's upload limit for bots.
MAX_SEND_BYTES = 50 * 1024 * 1024
_CHUNK = 64 * 1024


class FileRefused(ValueError):
    """The file cannot be sent or saved; the message says why."""


class DownloadFailed(RuntimeError):
    """The Bot API did not serve an upload (the message never names the URL: it holds the token)."""


def extract_send_files(text: str) -> tuple[str, list[str]]:
    """The answer without its ``[SEND_FILE: …]`` markers, and the paths they name (in order)."""
    paths = [match.group(1) for match in SEND_FILE.finditer(text)]
    return SEND_FILE.sub("", text).strip(), paths


@dataclass
class SendableFile:
    """A workspace file opened for sending; the caller closes ``opened``."""

    opened: OpenedFile
    #: Where the opened file is (symlinks inside the workspace followed).
    location: Path


def open_sendable(directory: Path, path: str) -> SendableFile:
    """The file ``path`` names inside ``directory``, opened; FileRefused when outside, missing (or
    not a regular file) or too big. Blocks: call it from a worker thread."""
    try:
        opened = WorkspaceFiles(directory).open_file(path)
    except PathEscapes:
        raise FileRefused(f"{path}: outside the workspace, not sent") from None
    except FileProblem:
        raise FileRefused(f"{path}: no such file in the workspace") from None
    if opened.size > MAX_SEND_BYTES:
        opened.close()
        raise FileRefused(f"{path}: larger than 50 MB, not sent")
    return SendableFile(opened, Path(os.readlink(f"/proc/self/fd/{opened.fd}")))


async def save_upload(directory: Path, name: str, download: Callable[[BinaryIO], Awaitable[object]]) -> None:
    """Save an upload as ``name`` in ``directory`` the way ``/files`` does: ``download(out)`` writes
    into a temporary file beside it (never through a symlink), renamed into place once complete."""
    upload = await anyio.to_thread.run_sync(WorkspaceFiles(directory).begin_upload, name)
    try:
        with os.fdopen(os.dup(upload.fd), "wb") as out:
            await download(out)
        await anyio.to_thread.run_sync(upload.commit)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(upload.abort)
        raise


def capped_download(remote: File, name: str, limit: int) -> Callable[[BinaryIO], Awaitable[None]]:
    """``download(out)`` for :func:`save_upload`: streams ``remote`` (from the Bot API, or the local
    file a ``--local`` Bot API server names) into ``out`` and raises FileRefused before more than
    ``limit`` bytes are written. PTB's own downloads read the whole file into memory, however large
    it turns out to be."""
    refused = FileRefused(
        f"{name}: larger than the upload limit of {limit} bytes (AICODEBOX_MAX_UPLOAD_BYTES), not saved"
    )
    if remote.file_size is not None and remote.file_size > limit:
        raise refused
    location = remote.file_path
    if not location:
        raise DownloadFailed(f"{name}: the Bot API gave no file path")

    async def copy(chunks: AsyncIterator[bytes], out: BinaryIO) -> None:
        written = 0
        async for chunk in chunks:
            written += len(chunk)
            if written > limit:
                raise refused
            out.write(chunk)

    async def download(out: BinaryIO) -> None:
        if not location.startswith(("http://", "https://")):
            async with await anyio.open_file(location, "rb") as local:
                await copy(_chunks(local), out)
            return
        parts = urlsplit(location)
        url = urlunsplit(parts._replace(path=quote(parts.path)))
        async with httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as client, client.stream("GET", url) as answer:
            if answer.status_code != 200:
                raise DownloadFailed(f"{name}: the Bot API answered {answer.status_code}")
            await copy(answer.aiter_raw(_CHUNK), out)

    return download


async def _chunks(local: anyio.AsyncFile[bytes]) -> AsyncIterator[bytes]:
    while chunk := await local.read(_CHUNK):
        yield chunk


def upload_name(name: str | None, fallback: str) -> str:
    """A plain file name for an upload (no directories, never ``.``/``..``)."""
    candidate = PurePosixPath((name or "").replace("\\", "/")).name.strip()
    return candidate if candidate not in ("", ".", "..") else fallback
