from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support.folders import new_folder
from tests.support.headless_chromium import Chromium, headless_chromium, pages_app
from tests.support.servers import serve_app


def isolated_settings(skills: Path) -> GatewaySettings:
    """Settings isolated from the machine: a private skills folder, nothing aggregated, no key, the
    browser proxy on any free port."""
    return replace(GatewaySettings.from_env({}), skills_path=skills, browser_proxy_port=0)


@pytest.fixture
def gateway_settings(tmp_path: Path) -> GatewaySettings:
    return isolated_settings(new_folder(tmp_path, "skills"))


@pytest.fixture
def gateway(gateway_settings: GatewaySettings) -> Iterator[str]:
    """A real gateway on a random loopback port; yields its base URL."""
    with serve_app(build_app(gateway_settings)) as url:
        yield url


@pytest.fixture(scope="module")
def module_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real gateway for a whole test module, for modules whose tests leave nothing another test
    could see (refusals, reads of their own tmp_path): starting one per test was most of their time."""
    with serve_app(build_app(isolated_settings(tmp_path_factory.mktemp("skills")))) as url:
        yield url


@pytest.fixture
def mcp_url(gateway: str) -> str:
    return f"{gateway}/mcp"


@pytest.fixture(scope="module")
def chromium() -> Iterator[Chromium]:
    """A headless Chromium shared by one test module (started only by the browser tests that ask)."""
    with headless_chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def pages_url() -> Iterator[str]:
    """Base URL of the browser tests' pages (``/form``, ``/color/{color}``)."""
    with serve_app(pages_app()) as url:
        yield url


@pytest.fixture
def own_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home of its own for the terminal tests: an interactive bash reads ~/.bashrc, and the
    machine's may do anything (wait on a pyenv lock...)."""
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
