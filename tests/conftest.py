import pytest
from playwright.sync_api import expect

#: Playwright's web-first assertions retry until this bound (its default is 5 s): a page that renders
#: in 2 s on an idle machine can need 10 s on two loaded cores, and the bound is only ever reached on
#: failure.
expect.set_options(timeout=20_000)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
