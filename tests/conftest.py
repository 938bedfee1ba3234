import pytest
from playwright.sync_api import expect

#: Playwright's web-first assertions retry until this bound (its default is 5 s): a page that renders
#: in 2 s on an idle machine can need 10 s on two loaded cores, and the bound is only ever reached on
#: failure.
expect.set_options(timeout=20_000)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


#: Gateway modules that use the seed's fixed paths (/tmp/agent-data.txt, /tmp/agent-result.txt) on
#: this machine: one removes what another is in the middle of reading.
SEED_PATH_MODULES = {
    "tests/gateway/doors/test_rest_and_mcp.py",
    "tests/gateway/doors/mcp/tools/test_files_mcp.py",
    "tests/gateway/doors/mcp/tools/test_code_mcp.py",
    "tests/gateway/doors/mcp/tools/test_shell_mcp.py",
    "tests/gateway/doors/mcp/test_seed_workflow.py",
    "tests/gateway/planes/files/test_files_plane.py",
}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Groups for ``pytest-xdist --dist loadgroup`` (scripts/test): a module runs whole in one worker
    (its module-scoped servers start once); the Docker tests share one worker (one image build, and
    the session's leftover clean-up must not remove another worker's containers), and so do the
    modules of the seed's fixed paths."""
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if item.get_closest_marker("docker") is not None:
            group = "docker"
        elif module in SEED_PATH_MODULES:
            group = "seed-paths"
        else:
            group = module
        item.add_marker(pytest.mark.xdist_group(group))
