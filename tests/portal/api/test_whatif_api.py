"""`POST /api/v1/what-if/` (issue 37): cluster admins see what a change would do to every
project's expected starts, the GPUs per project over the next hours and the jobs it stops now,
read from today's state as a cycle reads it; nothing is written; bad input is a 400 naming the
field; the schema documents it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import serializers as dumps
from django.utils import timezone

from portal.cluster.models import Node
from portal.jobs.models import Job, Status
from portal.tenancy.models import Project
from scheduler.whatif import NodeChange, ProjectChange

pytestmark = pytest.mark.django_db
URL = "/api/v1/what-if/"


@pytest.fixture
def busy(nodes, team_a, team_b, member, outsider):
    """team-b holds dgx1-1 (8 GPUs, one hour predicted), team-a dgx1-2 (two hours); team-a's
    a-wait (4 GPUs) and team-b's b-wait (4 GPUs) queue."""
    now = timezone.now()
    for project, name, node, user, hours in (
        (team_b, "b-run", "dgx1-1", outsider, 1),
        (team_a, "a-run", "dgx1-2", member, 2),
    ):
        Job.objects.create(project=project, name=name, gpus=8, user=user, status=Status.RUNNING,
                           started_at=now - timedelta(minutes=5), estimate_s=hours * 3600,
                           placement=[{"node": node, "devices": list(range(8))}])  # fmt: skip
    Job.objects.create(project=team_a, name="a-wait", gpus=4, user=member, estimate_s=3600)
    Job.objects.create(project=team_b, name="b-wait", gpus=4, user=outsider, estimate_s=3600)


def rows() -> str:
    """Every row a preview could touch, serialized (a change shows up as a different text)."""
    return "".join(
        dumps.serialize("json", model.objects.order_by("pk")) for model in (Job, Project, Node)
    )


def by_project(answer) -> dict:
    return {p["project"]: p for p in answer.json()["projects"]}


def test_a_drain_lists_the_job_it_stops_and_moves_the_queue_and_writes_nothing(
    api, cluster_admin, busy
):
    before = rows()
    answer = api(cluster_admin).post(
        URL, {"changes": [{"kind": "drain", "node": "dgx1-1"}], "hours": 6}, format="json"
    )
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert [(p["project"], p["job"]) for p in body["preempted"]] == [("team-b", "b-run")]
    assert body["preempted"][0]["id"] == Job.objects.get(name="b-run").id
    assert "dgx1-1 is drained" in body["preempted"][0]["reason"]
    projects = by_project(answer)
    # drained, b-run queues again and starts only once the queue ahead of it has run
    assert projects["team-b"]["stopped"] == 1 and projects["team-a"]["stopped"] == 0
    assert projects["team-b"]["before"]["last"] < projects["team-b"]["after"]["last"]
    assert projects["team-a"]["pending"] == 1 and projects["team-b"]["pending"] == 1
    first = body["series"]["before"][0]["gpus"]
    assert first == {"team-a": 8.0, "team-b": 8.0}
    assert body["series"]["after"][0]["gpus"] == {"team-a": 8.0, "team-b": 0.0}
    assert rows() == before


def test_a_quota_raise_reclaims_now_and_moves_the_other_project_later(api, cluster_admin, busy):
    """team-a's fair share grows to 12 of 16 GPUs: its a-wait reclaims team-b's b-run now (b-run
    is over team-b's share), and b-run queues again behind the others."""
    change = {"changes": [{"kind": "quota", "project": "team-a", "quota": 12}]}
    answer = api(cluster_admin).post(URL, change, format="json")
    assert answer.status_code == 200, answer.content
    body, projects = answer.json(), by_project(answer)
    assert projects["team-a"]["after"]["first"] == body["now"]
    assert projects["team-a"]["before"]["first"] > body["now"]
    assert [(p["project"], p["job"]) for p in body["preempted"]] == [("team-b", "b-run")]
    assert projects["team-b"]["stopped"] == 1
    assert projects["team-b"]["after"]["last"] >= projects["team-b"]["before"]["last"]
    assert body["series"]["before"][0]["gpus"] == {"team-a": 8.0, "team-b": 8.0}
    assert body["series"]["after"][0]["gpus"] == {"team-a": 12.0, "team-b": 4.0}
    assert Project.objects.get(name="team-a").quota == 4


@pytest.mark.parametrize(
    ("body", "field", "text"),
    [
        ({"changes": [{"kind": "quota", "project": "team-z", "quota": 2}]}, "project", "team-z"),
        ({"changes": [{"kind": "quota", "project": "team-a", "quota": -1}]}, "quota", "0"),
        ({"changes": [{"kind": "quota", "project": "team-a"}]}, "quota", "new value"),
        ({"changes": [{"kind": "drain", "node": "dgx9"}]}, "node", "dgx9"),
        ({"changes": [{"kind": "drain"}]}, "node", "names one"),
        ({"changes": [{"kind": "drain", "node": "dgx1-1", "quota": 3}]}, "quota", "takes no"),
        ({"changes": [{"kind": "explode", "node": "dgx1-1"}]}, "kind", "explode"),
        ({"changes": [{"kind": "quota", "project": "team-a", "quota": "8"}]}, "quota", ""),
    ],
)
def test_a_bad_change_is_a_400_naming_the_field(api, cluster_admin, busy, body, field, text):
    answer = api(cluster_admin).post(URL, body, format="json")
    assert answer.status_code == 400, answer.content
    errors = answer.json()["changes"]["0"]  # the first change's fields
    assert field in errors and text in " ".join(errors[field])


@pytest.mark.parametrize(
    ("body", "field"),
    [({"changes": []}, "changes"), ({"changes": [{"kind": "drain", "node": "dgx1-1"}],
                                      "hours": 1000}, "hours"), ({}, "changes")],
)  # fmt: skip
def test_a_bad_request_is_a_400_naming_the_field(api, cluster_admin, busy, body, field):
    answer = api(cluster_admin).post(URL, body, format="json")
    assert answer.status_code == 400 and field in answer.json(), answer.content


def test_only_cluster_admins_preview(api, owner, member, busy):
    body = {"changes": [{"kind": "drain", "node": "dgx1-1"}]}
    assert api(owner).post(URL, body, format="json").status_code == 403
    assert api().post(URL, body, format="json").status_code in (401, 403)


def test_the_schema_documents_the_what_if(api, member):
    schema = api(member).get("/api/schema/?format=json").json()
    assert "/api/v1/what-if/" in schema["paths"]
    assert {"projects", "series", "preempted"} <= set(
        schema["components"]["schemas"]["WhatIf"]["properties"]
    )


@pytest.fixture
def forward_runs(monkeypatch):
    """Counts the what-if's forward runs (a kept one is not a run); starts with nothing kept."""
    from portal.scheduling import whatif as portal_whatif
    from scheduler import whatif as core

    monkeypatch.setattr(portal_whatif, "_last", None)
    core.clear_forecasts()
    made = []
    real = core.forecast
    monkeypatch.setattr(core, "forecast", lambda *args: made.append(args[0].now) or real(*args))
    yield made
    core.clear_forecasts()


QUOTA = [ProjectChange("team-a", {"quota": 12})]
DRAIN = [NodeChange("dgx1-1", "drain")]


def test_previews_of_two_changes_on_unchanged_rows_run_the_before_once(busy, forward_runs):
    """An admin trying a quota, then a drain, seconds apart: the second preview runs from the
    first one's clock and reuses its before; its answer is the one a fresh preview then gives."""
    from portal.scheduling import whatif as portal_whatif
    from scheduler import whatif as core

    at = timezone.now()
    first = portal_whatif.preview(QUOTA, 6, now=at)
    assert len(forward_runs) == 2
    second = portal_whatif.preview(DRAIN, 6, now=at + timedelta(seconds=10))
    assert len(forward_runs) == 3
    assert second.result.now == first.result.now == at.timestamp()
    core.clear_forecasts()
    portal_whatif._last = None
    assert portal_whatif.preview(DRAIN, 6, now=at).result == second.result


def test_a_changed_row_or_an_old_read_is_a_fresh_preview(busy, forward_runs):
    from portal.scheduling import whatif as portal_whatif

    at = timezone.now()
    portal_whatif.preview(QUOTA, 6, now=at)
    Job.objects.filter(name="a-wait").update(estimate_s=7200)
    later = at + timedelta(seconds=10)
    assert portal_whatif.preview(DRAIN, 6, now=later).result.now == later.timestamp()
    assert forward_runs[-2:] == [later.timestamp()] * 2  # both runs made afresh
    much_later = later + timedelta(seconds=portal_whatif.REUSE_S + 1)
    assert portal_whatif.preview(DRAIN, 6, now=much_later).result.now == much_later.timestamp()
