"""Allot's scheduling core: a pure function from a cluster snapshot to a plan.

Standard library only; never reads the clock, settings or environment. See docs/rules.md for
the rules (R1-R15) every module cites.
"""

from .apply import apply_plan
from .cycle import plan_cycle, settle
from .model import (
    Decision,
    Department,
    Job,
    JobKey,
    Node,
    Plan,
    PodPlacement,
    Policy,
    Project,
    Reservation,
    Snapshot,
    UserLimit,
)

__all__ = [
    "Decision",
    "Department",
    "Job",
    "JobKey",
    "Node",
    "Plan",
    "PodPlacement",
    "Policy",
    "Project",
    "Reservation",
    "Snapshot",
    "UserLimit",
    "apply_plan",
    "plan_cycle",
    "settle",
]
