"""Agents carry the scheduler's decisions out on a cluster and report what the cluster does.

One small interface (:class:`agents.base.Agent`: observe, start, stop, logs, urls, and what the
portal may ask of it: its Jupyter sessions and shells) with plain dataclasses in and out, and its
drivers: :mod:`agents.simulated` (the embedded default) and, from step 6, Kubernetes. Agents import
neither Django nor the scheduler (import-linter contract): the portal converts its rows into
:class:`agents.base.JobSpec` and reads :class:`agents.base.Observation`.
"""

from .base import Agent, JobSpec, JobStatus, NodeStatus, Observation, PodSpec, PodStatus

__all__ = ["Agent", "JobSpec", "JobStatus", "NodeStatus", "Observation", "PodSpec", "PodStatus"]
