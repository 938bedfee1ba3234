"""The Telegram bot: python-telegram-bot with long polling, one agent run per chat at a time.

Updates from chats (or, where a chat lists ``allowed_users``, users) that are not allowed are
ignored: no answer, no run. A text message starts a run in the chat's workspace through the shared
:class:`~..run_service.RunService` (the same adapter, run loop and cross-process workspace lock
as MCP ``run_prompt``); a second message while the chat's run goes — or while another process holds
the workspace — is answered ``busy, try again later``. ``/cancel`` cancels the run, which kills the
agent's process group. A reply to a cron notification runs with that job's instruction and result
as context. Uploads (documents, photos, video, voice, audio) are saved in the chat's workspace;
with a caption, the caption is then run as a prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio
from telegram import (
    Audio,
    Document,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    Message,
    PhotoSize,
    Update,
    Video,
    Voice,
)
from telegram.error import TelegramError
from telegram.ext import (
    Application,
    CallbackQueryHandler,
    CommandHandler,
    ContextTypes,
    ExtBot,
    JobQueue,
    MessageHandler,
    filters,
)

from agentbox_common.errors import PlaneError
from agentbox_common.settings import ConfigError

from ..adapters.base import AgentRequest
from ..cron.history import CronHistory
from ..locks import TooManyRuns, WorkspaceBusy
from ..run_service import RunService, RunSpec
from .client import send_answer
from .files import FileRefused, capped_download, extract_send_files, open_sendable, save_upload, upload_name
from .settings import RESET_WORDS, ChatSettings, Overrides, TelegramSettings

logger = logging.getLogger(__name__)

BUSY = "busy, try again later"
HELP = """Send a message and the coding agent works on it in this chat's workspace.
/status: is a run going, and this chat's settings
/cancel: stop the running agent
/model [name], /effort [level]: pick (no argument) or set; a reset word (default, reset, clear, none) clears
/system_prompt [text], /append_system_prompt [text]: show or set
/config: this chat's settings
/fetch <path>: send a file of the workspace
/reload: re-read telegram.yml
Uploads land in the workspace; an upload's caption is run as a prompt.
An answer can send workspace files with [SEND_FILE: relative/path]."""

Handler = Callable[[Update, ContextTypes.DEFAULT_TYPE], Coroutine[Any, Any, None]]
#: What ``Application.builder()`` builds: PTB's default bot, context, (untyped) data dicts and job queue.
BotApplication = Application[
    ExtBot[None],
    ContextTypes.DEFAULT_TYPE,
    dict[Any, Any],
    dict[Any, Any],
    dict[Any, Any],
    JobQueue[ContextTypes.DEFAULT_TYPE],
]


class TelegramMode:
    def __init__(self, settings: TelegramSettings, service: RunService, history: CronHistory) -> None:
        self.settings = settings
        self.service = service
        self.history = history
        self.rules = settings.rules()
        self.overrides = Overrides(settings.overrides_path)
        self.runs: dict[int, asyncio.Task[None]] = {}
        self.run_started: dict[int, float] = {}

    # --- wiring ---------------------------------------------------------------------------------

    def build(self) -> BotApplication:
        base = self.settings.api_url
        application = (
            Application.builder()
            .token(self.settings.token)
            .base_url(f"{base}/bot")
            .base_file_url(f"{base}/file/bot")
            .build()
        )
        commands: dict[str, Handler] = {
            "start": self.help,
            "help": self.help,
            "status": self.status,
            "cancel": self.cancel,
            "reload": self.reload,
            "config": self.config,
            "model": self.model,
            "effort": self.effort,
            "system_prompt": self.system_prompt,
            "append_system_prompt": self.append_system_prompt,
            "fetch": self.fetch,
        }
        for name, handler in commands.items():
            application.add_handler(CommandHandler(name, self._gated(handler)))
        application.add_handler(MessageHandler(filters.TEXT & ~filters.COMMAND, self._gated(self.text)))
        uploads = filters.Document.ALL | filters.PHOTO | filters.VIDEO | filters.VOICE | filters.AUDIO
        application.add_handler(MessageHandler(uploads, self._gated(self.upload)))
        application.add_handler(CallbackQueryHandler(self.picked))
        application.add_error_handler(self.failed)
        return application

    async def failed(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        """A handler failed (an upload too big to fetch, the Bot API down): log it, tell the chat."""
        error = context.error
        logger.error("handling an update failed: %s: %s", type(error).__name__, error)
        if isinstance(update, Update) and update.effective_message and self.chat_settings(update) is not None:
            with contextlib.suppress(TelegramError):
                await update.effective_message.reply_text(f"error: {type(error).__name__}: {error}")

    def chat_settings(self, update: Update) -> ChatSettings | None:
        """The chat's settings when the chat and user are allowed, else None."""
        chat, user = update.effective_chat, update.effective_user
        if chat is None:
            return None
        settings = self.rules.settings(chat.id, self.overrides.of(chat.id))
        if settings is None:
            return None
        if settings.allowed_users is not None and (user is None or user.id not in settings.allowed_users):
            return None
        return settings

    def _gated(self, handler: Handler) -> Handler:
        async def gated(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
            if self.chat_settings(update) is None or update.effective_message is None:
                chat = update.effective_chat
                logger.info("ignored an update from chat %s (not allowed)", chat.id if chat else "?")
                return
            await handler(update, context)

        return gated

    # --- runs -----------------------------------------------------------------------------------

    def busy(self, chat_id: int) -> bool:
        task = self.runs.get(chat_id)
        return task is not None and not task.done()

    async def start_run(self, message: Message, prompt: str, workspace: str | None = None) -> None:
        chat_id = message.chat_id
        if self.busy(chat_id):
            await message.reply_text(BUSY)
            return
        settings = self.rules.settings(chat_id, self.overrides.of(chat_id))
        assert settings is not None
        spec = RunSpec(
            prompt=prompt,
            workspace=settings.workspace if workspace is None else workspace,
            model=settings.model,
            system_prompt=settings.system_prompt,
            append_system_prompt=settings.append_system_prompt,
            no_continue=not settings.continue_session,
            thinking=settings.effort,
        )
        try:
            request = await self.service.prepare(spec)
        except PlaneError as exc:  # a refused request or workspace
            await message.reply_text(f"error: {exc}")
            return
        self.run_started[chat_id] = time.monotonic()
        self.runs[chat_id] = asyncio.create_task(self._run(message, request), name=f"telegram-{chat_id}")

    async def _run(self, message: Message, request: AgentRequest) -> None:
        chat_id = message.chat_id
        try:
            try:
                outcome = await self.service.execute(request)
            except (WorkspaceBusy, TooManyRuns):
                await message.reply_text(BUSY)
                return
            failure = outcome.failure
            answer, paths = extract_send_files(f"error: {failure}" if failure else outcome.text)
            await send_answer(message.get_bot(), chat_id, answer, reply_to=message.message_id)
            for path in paths:
                await self.send_file(message, request.cwd, path)
        except TelegramError as exc:
            logger.error("chat %s: answering failed: %s", chat_id, exc)
        except Exception as exc:  # a failed run is told to the chat, never lost in a task
            logger.exception("chat %s: the run failed", chat_id)
            with contextlib.suppress(TelegramError):
                await message.reply_text(f"error: {type(exc).__name__}: {exc}")
        finally:
            self.run_started.pop(chat_id, None)

    async def send_file(self, message: Message, directory: Path, path: str) -> None:
        try:
            found = await anyio.to_thread.run_sync(open_sendable, directory, path)
        except FileRefused as exc:
            await message.reply_text(f"[SEND_FILE] {exc}")
            return
        with os.fdopen(found.opened.fd, "rb") as handle:
            await message.get_bot().send_document(message.chat_id, handle, filename=found.location.name)

    def chat_directory(self, settings: ChatSettings) -> Path:
        return self.service.workspace.run_directory(settings.workspace)

    # --- messages -------------------------------------------------------------------------------

    async def text(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.effective_message
        assert message is not None and message.text is not None
        replied = message.reply_to_message
        if replied is not None:
            run = self.history.notified_run(message.chat_id, replied.message_id)
            if run is not None:
                prompt = (
                    f"This message replies to the result of the scheduled job {run['job']!r}.\n\n"
                    f"Job instruction:\n{run['instruction']}\n\nJob result:\n{run['result']}\n\n"
                    f"Reply:\n{message.text}"
                )
                workspace = Path(run["workspace"]).relative_to(self.service.workspace.root).as_posix()
                await self.start_run(message, prompt, "" if workspace == "." else workspace)
                return
        await self.start_run(message, message.text)

    async def upload(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.effective_message
        settings = self.chat_settings(update)
        assert message is not None and settings is not None
        item: Document | PhotoSize | Video | Voice | Audio
        if message.document:
            item, name = message.document, upload_name(message.document.file_name, "document")
        elif message.photo:
            item = message.photo[-1]
            name = f"photo_{item.file_unique_id}.jpg"
        elif message.video:
            item = message.video
            name = upload_name(item.file_name, f"video_{item.file_unique_id}.mp4")
        elif message.voice:
            item, name = message.voice, f"voice_{message.voice.file_unique_id}.ogg"
        else:
            assert message.audio is not None
            item, name = message.audio, upload_name(message.audio.file_name, f"audio_{message.audio.file_unique_id}")
        directory = self.chat_directory(settings)
        remote = await item.get_file()
        try:
            await save_upload(directory, name, capped_download(remote, name, self.service.settings.max_upload_bytes))
        except FileRefused as exc:
            await message.reply_text(str(exc))
            return
        logger.info("chat %s: saved an upload as %s", message.chat_id, directory / name)
        if message.caption:
            await self.start_run(message, f"{message.caption}\n\n(The user uploaded the file {name} to the workspace.)")
        else:
            await message.reply_text(f"saved {name}")

    # --- commands -------------------------------------------------------------------------------

    async def help(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.effective_message is not None
        await update.effective_message.reply_text(HELP)

    async def status(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message, settings = update.effective_message, self.chat_settings(update)
        assert message is not None and settings is not None
        if self.busy(message.chat_id):
            state = f"running for {time.monotonic() - self.run_started.get(message.chat_id, time.monotonic()):.0f}s"
        else:
            state = "idle"
        await message.reply_text(f"{state}\n{settings.describe()}")

    async def cancel(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.effective_message
        assert message is not None
        task = self.runs.get(message.chat_id)
        if task is None or task.done():
            await message.reply_text("nothing to cancel")
            return
        task.cancel()
        await asyncio.wait({task}, timeout=15)
        await message.reply_text("cancelled")

    async def reload(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.effective_message
        assert message is not None
        try:
            self.rules = self.settings.rules()
        except ConfigError as exc:
            await message.reply_text(f"reload failed, keeping the old configuration: {exc}")
            return
        await message.reply_text("reloaded")

    async def config(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message, settings = update.effective_message, self.chat_settings(update)
        assert message is not None and settings is not None
        await message.reply_text(settings.describe())

    async def model(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        await self._pick(update, "model", self.settings.available_models, "AICODEBOX_AVAILABLE_MODELS")

    async def effort(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        await self._pick(update, "effort", self.settings.available_efforts, "AICODEBOX_AVAILABLE_EFFORTS")

    async def _pick(self, update: Update, key: str, offered: tuple[str, ...], variable: str) -> None:
        message, settings = update.effective_message, self.chat_settings(update)
        assert message is not None and settings is not None
        value = _argument(message)
        current = getattr(settings, key) or "(default)"
        if not value:
            if not offered:
                await message.reply_text(f"{key}: {current} ({variable} is empty: nothing to pick)")
                return
            buttons = [[InlineKeyboardButton(choice, callback_data=f"{key}:{choice}")] for choice in offered]
            buttons.append([InlineKeyboardButton("default", callback_data=f"{key}:default")])
            await message.reply_text(f"{key}: {current}", reply_markup=InlineKeyboardMarkup(buttons))
            return
        if value.lower() not in RESET_WORDS and offered and value not in offered:
            await message.reply_text(f"unknown {key} {value!r}; {variable} offers: {', '.join(offered)}")
            return
        self.overrides.set(message.chat_id, key, value)
        await message.reply_text(f"{key}: {value if value.lower() not in RESET_WORDS else '(default)'}")

    async def picked(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        query = update.callback_query
        if query is None or self.chat_settings(update) is None or update.effective_chat is None:
            return
        key, _, value = (query.data or "").partition(":")
        offered = {"model": self.settings.available_models, "effort": self.settings.available_efforts}.get(key)
        await query.answer()
        if offered is None or (value not in offered and value not in RESET_WORDS):
            return
        self.overrides.set(update.effective_chat.id, key, value)
        with contextlib.suppress(TelegramError):
            await query.edit_message_text(f"{key}: {value if value not in RESET_WORDS else '(default)'}")

    async def system_prompt(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        await self._text_setting(update, "system_prompt")

    async def append_system_prompt(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        await self._text_setting(update, "append_system_prompt")

    async def _text_setting(self, update: Update, key: str) -> None:
        message, settings = update.effective_message, self.chat_settings(update)
        assert message is not None and settings is not None
        value = _argument(message)
        if not value:
            await message.reply_text(f"{key}: {getattr(settings, key) or '(none)'}")
            return
        self.overrides.set(message.chat_id, key, value)
        await message.reply_text(f"{key}: {value if value.lower() not in RESET_WORDS else '(none)'}")

    async def fetch(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message, settings = update.effective_message, self.chat_settings(update)
        assert message is not None and settings is not None
        path = _argument(message)
        if not path:
            await message.reply_text("usage: /fetch <path in the workspace>")
            return
        await self.send_file(message, self.chat_directory(settings), path)

    # --- lifecycle ------------------------------------------------------------------------------

    async def cancel_all(self) -> None:
        tasks = [task for task in self.runs.values() if not task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=15)


def _argument(message: Message) -> str:
    """Everything after the command word, newlines kept."""
    parts = (message.text or "").split(maxsplit=1)
    return parts[1].strip() if len(parts) > 1 else ""
