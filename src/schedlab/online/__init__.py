"""The policies as an online scheduler (issue 34): :class:`Scheduler` takes the jobs and
completions of a real system, as they happen, and returns the actions the policy takes, with the
same compiled policy and engine as a simulation (docs/online.md, docs/decisions/0012)."""

from schedlab.online.messages import (
    Action,
    Complete,
    Job,
    RunningJob,
    SchedulerState,
    Submit,
)
from schedlab.online.scheduler import Scheduler

__all__ = ["Action", "Complete", "Job", "RunningJob", "Scheduler", "SchedulerState", "Submit"]
