"""Talking to the Bot API, shared by Telegram mode and cron's notifications.

``AICODEBOX_TELEGRAM_MODE_API_URL`` (default ``https://api.telegram.org``) is the Bot API server:
methods are called at ``<url>/bot<token>/<method>`` and files fetched from
``<url>/file/bot<token>/<path>``, as the Bot API defines, so a self-hosted Bot API server (or a
local fake in tests) works. Answers are rendered from Markdown to Telegram HTML and cut into
messages within Telegram's 4096-character limit, tags closed and reopened across the cut.
"""

from __future__ import annotations

from collections.abc import Mapping

from chatgpt_md_converter import split_html_for_telegram, telegram_format
from telegram import Bot, Message
from telegram.constants import MessageLimit, ParseMode

from agentbox_common.settings import ConfigError, env_str

DEFAULT_API_URL = "https://api.telegram.org"


def make_bot(token: str, api_url: str = DEFAULT_API_URL) -> Bot:
    base = api_url.rstrip("/")
    return Bot(token, base_url=f"{base}/bot", base_file_url=f"{base}/file/bot")


def render_chunks(markdown: str) -> list[str]:
    """Telegram HTML messages for a Markdown answer, each within the message size limit."""
    html = telegram_format(markdown)
    return [chunk for chunk in split_html_for_telegram(html, max_length=MessageLimit.MAX_TEXT_LENGTH) if chunk.strip()]


async def send_answer(bot: Bot, chat_id: int | str, markdown: str, reply_to: int | None = None) -> list[Message]:
    """Post ``markdown`` as one or more HTML messages; an empty text still sends a placeholder."""
    sent = []
    for index, chunk in enumerate(render_chunks(markdown) or ["<i>(empty answer)</i>"]):
        sent.append(
            await bot.send_message(
                chat_id,
                chunk,
                parse_mode=ParseMode.HTML,
                reply_to_message_id=reply_to if index == 0 else None,
            )
        )
    return sent


def telegram_api_url(env: Mapping[str, str]) -> str:
    """``AICODEBOX_TELEGRAM_MODE_API_URL`` (an http(s) URL) or the public Bot API."""
    url = env_str("AICODEBOX_TELEGRAM_MODE_API_URL", "", env).strip().rstrip("/") or DEFAULT_API_URL
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"AICODEBOX_TELEGRAM_MODE_API_URL must be an http(s) URL, got {url!r}")
    return url
