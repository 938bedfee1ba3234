"""Issue 26, item 1 in a real Chromium against a bare gateway (the image's test is
tests/e2e/test_image_preview_origin.py): a previewed app's page, opened from the dashboard on its
own origin (``{port}.localhost``) or through the sandboxed ``/proxy/{port}/``, cannot read the
gateway, mint a ticket, run a command or open a terminal; the dashboard still can; key or not."""

from __future__ import annotations

import glob
import shutil
import sys
from collections.abc import Iterator

import pytest
from playwright.sync_api import BrowserContext

from tests.support.preview_browser import (
    EVIL_PAGE,
    assert_all_failed,
    assert_dashboard_can,
    browser_context,
    open_both_ways,
)
from tests.support.servers import console_script, free_port, run_command

pytestmark = [pytest.mark.chromium, pytest.mark.usefixtures("own_home")]
KEY = "preview-origin-browser-key-77d1"


@pytest.fixture(scope="module")
def app_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    folder = tmp_path_factory.mktemp("evil")
    shutil.copy(EVIL_PAGE, folder / "index.html")
    port = free_port()
    args = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(folder)]
    with run_command(args, ready_url=f"http://127.0.0.1:{port}/"):
        yield port


@pytest.fixture
def context() -> Iterator[BrowserContext]:
    with browser_context() as fresh:
        yield fresh


def pwned() -> set[str]:
    return set(glob.glob("/tmp/pwned-*"))


@pytest.mark.parametrize("key", [KEY, None], ids=["keyed", "key-less"])
def test_a_previewed_page_cannot_act_as_the_person(key: str | None, app_port: int, context: BrowserContext) -> None:
    before = pwned()
    port = free_port()
    gateway = f"http://127.0.0.1:{port}"
    env = {"AIO_API_KEY": key} if key else {}
    with run_command([console_script("aiod"), "start", "--port", str(port)], env=env, ready_url=f"{gateway}/health"):
        dashboard, preview, results = open_both_ways(context, gateway, key, app_port)
        assert preview.url == f"http://{app_port}.localhost:{port}/"
        assert_all_failed(results)
        assert_dashboard_can(dashboard)
    assert pwned() == before, pwned() - before
