"""The shell plane's programs (sandboxd's processes): output a reader has not taken yet is bounded —
the program waits, as on a terminal nobody reads — and none of it is lost once the reader catches up;
a reader that goes away (``abandon``) holds nothing back."""

from __future__ import annotations

import asyncio

import pytest

from agentbox_gateway.planes.shell.programs import QUEUED_LIMIT, Exited, Output, ProgramRequest, Programs
from tests.support.polling import eventually

pytestmark = pytest.mark.anyio

SIZE = 8 * QUEUED_LIMIT


async def test_output_not_read_yet_is_bounded_and_none_is_lost(tmp_path) -> None:
    programs = Programs(4)
    program = await programs.start(ProgramRequest(("head", "-c", str(SIZE), "/dev/zero"), str(tmp_path)))
    await asyncio.sleep(0.5)
    assert program.running, "the program went on writing although nobody read its output"
    assert program._queued <= QUEUED_LIMIT + 2 * 4096
    received = 0
    async for event in program.events():
        if isinstance(event, Output):
            received += len(event.data)
        else:
            assert isinstance(event, Exited) and event.exit_code == 0
    assert received == SIZE
    await programs.aclose()


async def test_an_abandoned_program_holds_nothing_back(tmp_path) -> None:
    programs = Programs(4)
    program = await programs.start(ProgramRequest(("head", "-c", str(SIZE), "/dev/zero"), str(tmp_path)))
    await asyncio.sleep(0.2)
    program.abandon()
    assert await eventually(lambda: not program.running, 10)
    assert program.exit_code == 0
    await programs.aclose()
