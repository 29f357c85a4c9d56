"""`/metrics` exports the Kubernetes agent's failed API calls and back-offs (issue 35): a cycle
adds what its agent counted to the totals every process shares, a scrape adds the web process's
own agent's (its log reads), and the counts of several processes add up."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from agents.base import AgentCounts
from agents.kubernetes.agent import KubernetesAgent
from agents.kubernetes.inventory import KubernetesConfig
from portal.jobs.models import Status
from portal.scheduling import agent as agent_module
from portal.scheduling import cycle_metrics
from portal.scheduling.agent import job_spec
from tests.portal.scheduling.conftest import Cluster
from tests.portal.scheduling.test_kubernetes_cycle import fake, monotonic  # noqa: F401
from tests.portal.scheduling.test_metrics_endpoint import scrape  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

ERRORS = "allot_agent_api_errors_total"


@pytest.fixture
def k8s(fake, clock, monotonic):  # noqa: F811
    cache.clear()  # the totals are the cache's: none from another test
    config = KubernetesConfig(host=fake.url, node_refresh_s=0, watch_timeout_s=5)
    made = KubernetesAgent(config, clock=clock, monotonic=monotonic)
    yield Cluster(made)
    made.close()


def errors(samples: dict, verb: str, resource: str, code: str) -> float:
    return samples.get((ERRORS, (("code", code), ("resource", resource), ("verb", verb))), 0)


def test_a_pod_answered_500_is_an_error_and_a_backoff(k8s, fake, monotonic, scrape):  # noqa: F811
    k8s.project("team-a", 4)
    k8s.submit("team-a", "train", gpus=1)
    fake.fail_create = {"train-0"}
    k8s.cycle()
    samples = scrape()
    assert errors(samples, "create", "pods", "500") == 1
    assert samples[("allot_agent_backoffs_total", (("scope", "job"),))] == 1
    assert samples[("allot_agent_backoff_seconds_total", (("scope", "job"),))] == 1.0
    fake.fail_create = set()
    monotonic.now += 1  # the job's back-off is over
    k8s.settle()
    assert k8s.job("team-a", "train").status == Status.RUNNING
    assert errors(scrape(), "create", "pods", "500") == 1  # counted once, kept


def test_the_web_agents_and_workers_counts_add_up(k8s, fake, scrape, monkeypatch):  # noqa: F811
    k8s.project("team-a", 4)
    k8s.submit("team-a", "train", gpus=1)
    k8s.settle()
    web_agent = k8s.agent
    monkeypatch.setattr(agent_module, "_agent", web_agent)  # this process's agent
    fake.go_down()
    try:
        lines = web_agent.logs(job_spec(k8s.job("team-a", "train")))
        assert "logs unavailable" in lines[0]
        other_worker = AgentCounts({("get", "pods/log", "none"): 2}, {"agent": 1}, {"agent": 4.0})
        cycle_metrics.record_agent(other_worker)
        samples = scrape()
    finally:
        fake.come_up()
    assert errors(samples, "get", "pods/log", "none") == 3
    assert samples[("allot_agent_backoff_seconds_total", (("scope", "agent"),))] == 4.0
