"""Issue 34 item 16: the audit page shows changed quantities in their units ("600 GiB"), not the
stored numbers ("memory_limit_bytes: (dash) -> 614400")."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db
DASH = "\N{EN DASH}"


def test_a_changed_limit_reads_in_gib_cores_and_durations(api, cluster_admin, team_a):
    body = {"memory_limit": "600Gi", "cpu_limit": "8", "min_runtime_reclaim": "10m"}
    answer = api(cluster_admin).patch("/api/v1/projects/team-a/", body, format="json")
    assert answer.status_code == 200, answer.content
    client = Client()
    client.force_login(cluster_admin)
    page = client.get("/audit/").content.decode()
    assert f"memory limit: {DASH} → 600 GiB" in page
    assert f"cpu limit: {DASH} → 8 cores" in page
    assert "614400" not in page and "memory_limit_bytes" not in page


def test_values_without_a_unit_stay_as_they_are():
    from portal.web.templatetags.allot import change_field, change_value

    assert change_value(None, "quota") == DASH and change_value(4, "quota") == "4"
    assert change_value(3600, "run_timeout_s") == "1 h 0 min"
    assert change_field("gpu_quota") == "gpu quota"
