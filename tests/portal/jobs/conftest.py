"""The scheduling tests' frozen clock, simulated agent and row-building cluster, for job tests."""

from tests.portal.scheduling.conftest import agent, clock, cluster  # noqa: F401
