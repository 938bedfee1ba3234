"""The base of every JSON request body on ``/v1/*``: strict types, so a body that violates the published
schema (``1`` for a boolean, ``true`` for a number, ``"5"`` for an integer) is refused with 422 instead
of being coerced into something the caller did not send; and no ``NaN``/``Infinity`` (Python's JSON
parser reads them, JSON has no such numbers)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictBody(BaseModel):
    model_config = ConfigDict(strict=True, allow_inf_nan=False)
