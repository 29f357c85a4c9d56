"""The agent's API errors in /metrics as a real API server produces them (issue 35): a
ResourceQuota's admission refuses a job's pod (403 "exceeded quota"), the job fails with the
API's message, and `allot_agent_api_errors_total{verb="create",resource="pods",code="403"}` has
counted the refusal once. (Faults a real server does not produce on demand, a 500 on one pod
or no answer at all, are tested against the fake server: tests/portal/scheduling/
test_metrics_agent.py.)"""

from __future__ import annotations

import pytest
from django.test import Client
from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families

from tests.k8s.portal_lab import (  # noqa: F401  (fixture_*: the fixtures this module uses)
    Rest,
    eventually,
    fixture_allot_lab,
    fixture_portal_on_lab,
)

pytestmark = [pytest.mark.k8s, pytest.mark.django_db(transaction=True)]
TOKEN = "metrics-on-lab-token-0123456789"
REFUSED = ("allot_agent_api_errors_total", (("code", "403"), ("resource", "pods"),
                                            ("verb", "create")))  # fmt: skip


def scrape() -> dict:
    answer = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert answer.status_code == 200, answer.content
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(answer.content.decode())
        for sample in family.samples
    }


def test_a_pod_the_resource_quota_refuses_is_counted_as_a_403_on_create(
    portal_on_lab, allot_lab, api, cluster_admin, settings
):
    settings.ALLOT_METRICS_TOKEN = TOKEN
    rest = Rest(api(cluster_admin))
    core = allot_lab.core
    namespace = "allot-capped"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(
        name=namespace,
        labels={"app.kubernetes.io/managed-by": "allot", "allot.io/project": "capped"},
    )))  # fmt: skip
    quota = client.V1ResourceQuota(
        metadata=client.V1ObjectMeta(name="gpus"),
        spec=client.V1ResourceQuotaSpec(hard={"requests.nvidia.com/gpu": "0"}),
    )
    core.create_namespaced_resource_quota(namespace, quota)
    eventually(  # admission enforces a quota once the controller has counted its usage
        lambda: core.read_namespaced_resource_quota("gpus", namespace).status.hard,
        "the ResourceQuota's status",
    )
    before = scrape().get(REFUSED, 0)
    rest.project("capped", 4)
    rest.submit("capped", "refused", 1)
    rest.settle()
    rest.status_becomes("capped", "refused", "Failed")
    assert scrape().get(REFUSED, 0) - before == 1
