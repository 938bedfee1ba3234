"""One vocabulary for "is it up", shared by the capability report and every page: each capability
the report lists carries a ``status`` from it, and the dashboard reads the healthy value from its
own ``<body>`` (:func:`agentbox_gateway.web.dashboard_html`), so nothing says it twice."""

from __future__ import annotations

from typing import Final, Literal

#: The capability answers and can be used now.
READY: Final = "ready"
#: The capability is missing, or did not answer its probe.
ABSENT: Final = "absent"

Status = Literal["ready", "absent"]
STATUSES: Final[tuple[Status, ...]] = (READY, ABSENT)


def status_of(up: bool) -> Status:
    return READY if up else ABSENT
