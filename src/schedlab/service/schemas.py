"""Request and response models of ``schedlab serve`` (published at /openapi.json).

Every request model forbids unknown fields (a typo is a 422 naming the field, never ignored) and
is strict: a number must be a JSON number (``"4"`` and ``true`` are refused; an integer is a
number where a float is asked).
Times are the caller's (any unit, the same for every request), finite and >= 0. Job ids are
strings in the service: a number is taken as its decimal text, so ``7`` and ``"7"`` are one job.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Time = Annotated[float, Field(ge=0, allow_inf_nan=False, description="the caller's time")]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
JobId = Annotated[str, Field(min_length=1, max_length=200, description="the caller's job id")]


class Strict(BaseModel):
    """A request model: no unknown field, no coercion (``"4"`` or ``true`` is no number)."""

    model_config = ConfigDict(extra="forbid", strict=True)


def _as_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class JobIn(Strict):
    """A job as the policy may know it: its need (pooled: whole servers) or demand (packing, loss:
    one number, a list per resource, or a table by resource name; default: the class's), its
    exact size (clairvoyant policies), requested time (backfilling) and class (elasticity,
    reward)."""

    id: JobId
    need: Annotated[int, Field(ge=1)] | None = None
    demand: (
        Annotated[float, Field(ge=0, allow_inf_nan=False)]
        | list[Annotated[float, Field(ge=0, allow_inf_nan=False)]]
        | dict[str, Annotated[float, Field(ge=0, allow_inf_nan=False)]]
        | None
    ) = None
    size: Positive | None = Field(None, description="exact size (clairvoyant policies)")
    requested: Positive | None = Field(None, description="requested/estimated run time")
    job_class: str | None = Field(None, description="the spec's class name (default: the first)")

    _id_text = field_validator("id", mode="before")(_as_text)

    @model_validator(mode="after")
    def _need_or_demand(self) -> JobIn:
        if self.need is not None and self.demand is not None:
            raise ValueError("give the job's need or its demand, not both")
        return self


class SubmitRequest(JobIn):
    """POST /jobs: one job arrives at ``at``."""

    at: Time


class AtRequest(Strict):
    """POST /jobs/{id}/complete and POST /advance: the instant."""

    at: Time


class SubmitEvent(Strict):
    kind: Literal["submit"]
    job: JobIn


class CompleteEvent(Strict):
    kind: Literal["complete"]
    id: JobId

    _id_text = field_validator("id", mode="before")(_as_text)


class EventsRequest(Strict):
    """POST /events: events of one instant, applied in order, then one decision."""

    at: Time
    events: list[Annotated[SubmitEvent | CompleteEvent, Field(discriminator="kind")]] = Field(
        min_length=1, max_length=100_000
    )


class ActionOut(BaseModel):
    """One action the policy took (the engine's action names)."""

    time: float
    kind: str
    job: str | None = Field(description="the caller's job id; null for a server action")
    server: int | None = Field(
        description="the engine's server (0 in the pooled family); null when the action has none"
    )
    allocation: float = Field(description="the job's allocation (a multiple of its demand)")
    servers: list[int] = Field(
        description="the servers the job holds after a start, migrate or set_allocation (pooled:"
        " its need times its allocation, lowest free first as the jobs output names them; "
        "packing, loss: its server); empty for other actions"
    )


class ActionsOut(BaseModel):
    actions: list[ActionOut]
    event: int = Field(description="the event's number (its event log line's seq)")
    first_action: int = Field(description="the first action's number (the others follow)")


class NumberedActionOut(ActionOut):
    """An action with its number, its event's number and the event's time."""

    seq: int
    event: int
    at: float


class ActionsAfterOut(BaseModel):
    actions: list[NumberedActionOut]
    last: int = Field(description="the last action's number")


class ErrorOut(BaseModel):
    error: str = Field(description="one line saying what was wrong; nothing was changed")
