"""Topology defaults per project and per node pool (issue 38): a gang whose submission names
no `topology` gets its project's default, else its pools' when they all agree; `{}` asks for
none; a one-pod job gets none; a default level no pool has is a 400 naming the field; the
project form sets and shows them; the cycle places a defaulted gang inside one rack."""

from __future__ import annotations

import pytest
from django.test import Client

from portal.cluster.models import PoolTopology
from portal.jobs.models import Job
from portal.tenancy.models import Project

pytestmark = pytest.mark.django_db
RACK = "example.com/rack"
BLOCK = "example.com/block"
A = "/api/v1"


@pytest.fixture
def racks(api, cluster_admin, cluster):
    """Four 1-GPU nodes in two racks of one block, levels given over REST; project team-a."""
    admin = api(cluster_admin)
    for i in range(4):
        body = {"name": f"n{i}", "gpus": 1, "labels": {BLOCK: "b0", RACK: f"r{i // 2}"}}
        assert admin.post(f"{A}/nodes/", body, format="json").status_code == 201
    body = {"pool": "default", "levels": [BLOCK, RACK]}
    assert admin.post(f"{A}/topology/", body, format="json").status_code == 201
    cluster.project("team-a", 8)
    return admin


def submit(admin, name: str, pods: int = 2, **extra):
    body = {"project": "team-a", "name": name, "gpus": 1, "pods": pods, **extra}
    answer = admin.post(f"{A}/jobs/", body, format="json")
    assert answer.status_code == 201, answer.json()
    return answer.json()


def test_a_gang_gets_its_projects_default_and_a_one_pod_job_or_an_explicit_one_does_not(racks):
    answer = racks.patch(f"{A}/projects/team-a/", {"default_topology_required": "rack"},
                         format="json")  # fmt: skip
    assert answer.status_code == 200, answer.json()
    assert answer.json()["default_topology_required"] == "rack"
    assert submit(racks, "gang")["topology"] == {"required": "rack"}
    assert submit(racks, "single", pods=1)["topology"] == {}
    assert submit(racks, "own", topology={"preferred": "block"})["topology"] == {
        "preferred": "block"
    }
    assert submit(racks, "none", topology={})["topology"] == {}
    stored = dict(Job.objects.values_list("name", "topology"))
    assert stored == {"gang": {"required": "rack"}, "single": {}, "own": {"preferred": "block"},
                      "none": {}}  # fmt: skip


def test_the_pools_default_applies_when_the_project_has_none_and_the_project_wins(racks):
    body = {"levels": [BLOCK, RACK], "default_preferred": "rack"}
    answer = racks.patch(f"{A}/topology/default/", body, format="json")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["default_preferred"] == "rack"
    assert submit(racks, "pooled")["topology"] == {"preferred": "rack"}
    Project.objects.filter(name="team-a").update(default_topology_required="block")
    assert submit(racks, "projects")["topology"] == {"required": "block"}


def test_pools_with_different_defaults_give_a_gang_that_may_use_both_none(racks, api):
    PoolTopology.objects.filter(pool="default").update(default_required="rack")
    body = {"name": "m0", "gpus": 1, "pool": "other"}
    assert racks.post(f"{A}/nodes/", body, format="json").status_code == 201
    assert submit(racks, "anywhere")["topology"] == {}
    Project.objects.filter(name="team-a").update(node_pools=["default"])
    assert submit(racks, "pinned")["topology"] == {"required": "rack"}


def test_a_default_level_no_pool_has_is_a_400_naming_the_field_and_nothing_changes(racks):
    answer = racks.patch(f"{A}/projects/team-a/", {"default_topology_required": "zone"},
                         format="json")  # fmt: skip
    assert answer.status_code == 400
    assert "'zone' is not a topology level" in answer.json()["default_topology_required"][0]
    assert Project.objects.get(name="team-a").default_topology_required == ""
    answer = racks.patch(f"{A}/topology/default/", {"default_required": "zone"}, format="json")
    assert answer.status_code == 400
    assert "'zone' is not a level of this pool" in answer.json()["default_required"][0]
    assert PoolTopology.objects.get(pool="default").default_required == ""


def test_a_defaulted_gang_is_placed_inside_one_rack(racks, cluster):
    Project.objects.filter(name="team-a").update(default_topology_required="rack")
    submit(racks, "one", pods=1)
    cluster.settle()
    assert cluster.job("team-a", "one").nodes == ["n0"]
    submit(racks, "gang")
    cluster.settle()
    assert sorted(cluster.job("team-a", "gang").nodes) == ["n2", "n3"]


def test_the_project_form_sets_and_shows_the_defaults(racks, cluster_admin):
    browser = Client()
    browser.force_login(cluster_admin)
    page = browser.get("/projects/team-a/edit/").content.decode()
    assert 'name="default_topology_required"' in page
    form = {"quota": "8", "default_topology_required": "zone"}
    answer = browser.post("/projects/team-a/edit/", form)
    assert answer.status_code == 400
    assert "&#x27;zone&#x27; is not a topology level" in answer.content.decode()
    form = {"quota": "8", "default_topology_required": "rack", "default_topology_preferred": ""}
    answer = browser.post("/projects/team-a/edit/", form)
    assert answer.status_code == 302, answer.content.decode()[:2000]
    project = Project.objects.get(name="team-a")
    assert (project.default_topology_required, project.default_topology_preferred) == ("rack", "")
    page = browser.get("/projects/team-a/edit/").content.decode()
    assert 'value="rack"' in page
