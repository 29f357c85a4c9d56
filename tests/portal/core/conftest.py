"""The scheduling tests' frozen clock, simulated agent and row-building cluster, for the backup
tests' portal that has run jobs."""

from tests.portal.scheduling.conftest import agent, clock, cluster  # noqa: F401
