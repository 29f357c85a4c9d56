"""Trace-driven simulation of the scheduling core: `python -m scheduler_tools.simulate TRACE.csv`.

Replays a job trace (Philly, Alibaba openb, or any CSV with the same columns) in virtual time
through :func:`scheduler.plan_cycle` under one or more registered policies and reports queueing,
JCT, utilisation and per-team fairness. Standard library only, except the HTML report, which
imports plotly lazily. See docs/simulation.md.
"""

from .engine import Cluster, SimOptions, Simulation
from .metrics import JobOutcome, RunResult
from .policies import POLICIES, PolicySpec, get_policy
from .trace import Trace, TraceJob, read_quotas, read_trace

__all__ = [
    "POLICIES",
    "Cluster",
    "JobOutcome",
    "PolicySpec",
    "RunResult",
    "SimOptions",
    "Simulation",
    "Trace",
    "TraceJob",
    "get_policy",
    "read_quotas",
    "read_trace",
]
