"""``AIO_API_KEY_FILE``: the gateway's key read from a file, as the key or only its digest, so the key
need not be in any process environment (deploy/kubernetes/ gives each pod the digest of its own key)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from agentbox_common.keys import digest_of
from agentbox_common.settings import ConfigError
from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.gateway.conftest import isolated_settings
from tests.support import shared_http
from tests.support.servers import serve_app

KEY = "k" * 40


def settings_with(tmp_path: Path, content: str) -> GatewaySettings:
    key_file = tmp_path / "key"
    key_file.write_text(content)
    skills = tmp_path / "skills"
    skills.mkdir()
    loaded = GatewaySettings.from_env({"AIO_API_KEY_FILE": str(key_file)})
    return replace(isolated_settings(skills), api_key=loaded.api_key)


@pytest.mark.parametrize("content", [f"{KEY}\n", f"{digest_of(KEY)}\n"], ids=["key", "digest"])
def test_the_key_file_guards_the_gateway(tmp_path: Path, content: str) -> None:
    settings = settings_with(tmp_path, content)
    assert settings.api_key == content.strip()
    with serve_app(build_app(settings)) as url:
        assert shared_http.get(f"{url}/v1/sandbox").status_code == 401
        assert shared_http.get(f"{url}/v1/sandbox", headers={"Authorization": "Bearer wrong"}).status_code == 401
        # The digest itself is no key: a reader of the file learns nothing it can present.
        assert shared_http.get(f"{url}/v1/sandbox", headers={"x-api-key": digest_of(KEY)}).status_code == 401
        assert shared_http.get(f"{url}/v1/sandbox", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
        assert shared_http.get(f"{url}/v1/sandbox", params={"api_key": KEY}).status_code == 200
        signed_in = shared_http.post(f"{url}/login", data={"key": KEY, "next": "/"})
        assert signed_in.status_code == 303 and "agentbox_session" in signed_in.headers.get("set-cookie", "")


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "cannot read"), ("", "exactly one non-empty line"), ("a\nb\n", "exactly one non-empty line")],
    ids=["missing", "empty", "two lines"],
)
def test_a_bad_key_file_stops_the_start(tmp_path: Path, content: str | None, message: str) -> None:
    key_file = tmp_path / "key"
    if content is not None:
        key_file.write_text(content)
    with pytest.raises(ConfigError, match=message):
        GatewaySettings.from_env({"AIO_API_KEY_FILE": str(key_file)})


def test_the_key_and_a_key_file_together_are_refused(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(KEY)
    with pytest.raises(ConfigError, match="not both"):
        GatewaySettings.from_env({"AIO_API_KEY_FILE": str(key_file), "AIO_API_KEY": KEY})
