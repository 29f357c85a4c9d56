"""The submit form's topology boxes and the job page's domain (issue 38, R23): a level no pool
has is shown next to the box in the API's words and nothing is stored; a good one reaches the
job; a running job's page says the rack it landed in."""

from __future__ import annotations

import pytest
from django.test import Client

from portal.cluster.models import Node, PoolTopology
from portal.jobs.models import Job
from portal.scheduling.settle import settle

pytestmark = pytest.mark.django_db
RACK = "example.com/rack"
FORM = {"project": "team-a", "name": "gang", "gpus": "1", "pods": "2", "type": "train"}


@pytest.fixture
def racks(nodes):
    """The two 8-GPU nodes of `nodes` in racks r1 and r2 of pool default."""
    for node, rack in zip(nodes, ("r1", "r2"), strict=True):
        Node.objects.filter(pk=node.pk).update(labels={RACK: rack})
    PoolTopology.objects.create(pool="default", levels=[RACK])


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_r23_2_a_level_no_pool_has_is_named_next_to_the_box_and_nothing_is_stored(member, racks):
    response = browser(member).post("/jobs/new/", FORM | {"topology_required": "zone"})
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="err_topology_required"' in page
    assert "&#x27;zone&#x27; is not a topology level of any node pool" in page
    assert not Job.objects.exists()


def test_r23_1_the_form_submits_the_constraint_and_the_job_page_shows_the_rack(member, racks):
    form = FORM | {"topology_required": "rack", "topology_preferred": ""}
    response = browser(member).post("/jobs/new/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Job.objects.get(name="gang").topology == {"required": "rack"}
    settle()
    page = browser(member).get("/jobs/team-a/gang/").content.decode()
    assert "required: one rack; runs in rack r1" in page


# ---- the nodes page's topology card: levels and pool defaults set from the page (R23.1) ----
LEVELS = {"form": "topology", "topology_pool": "default",
          "topology_levels": "example.com/block, example.com/rack, kubernetes.io/hostname",
          "topology_default_required": "", "topology_default_preferred": "block"}  # fmt: skip


def test_r23_1_a_cluster_admin_sets_a_pools_levels_and_default_on_the_nodes_page(
    cluster_admin, member
):
    response = browser(cluster_admin).post("/nodes/", LEVELS)
    assert response.status_code == 302
    row = PoolTopology.objects.get(pool="default")
    assert row.levels == ["example.com/block", "example.com/rack", "kubernetes.io/hostname"]
    assert (row.default_required, row.default_preferred) == ("", "block")
    page = browser(member).get("/nodes/").content.decode()  # researchers read it, no form
    assert "<code>example.com/rack</code>" in page and 'data-pool="default"' in page
    assert 'name="topology_levels"' not in page
    narrower = LEVELS | {"topology_levels": RACK, "topology_default_preferred": "block"}
    refused = browser(cluster_admin).post("/nodes/", narrower)  # block is no longer a level
    assert refused.status_code == 400 and 'id="err_topology_default_preferred"' in (
        refused.content.decode()
    )
    again = browser(cluster_admin).post("/nodes/", narrower | {"topology_default_preferred": ""})
    assert again.status_code == 302  # replaced, as POST /api/v1/topology/ replaces
    assert PoolTopology.objects.get(pool="default").levels == [RACK]


def test_r23_1_a_bad_level_is_the_page_again_naming_the_field_and_nothing_is_saved(
    cluster_admin,
):
    bad = LEVELS | {"topology_levels": "rack, rack"}
    response = browser(cluster_admin).post("/nodes/", bad)
    assert response.status_code == 400
    page = response.content.decode()
    assert 'id="err_topology_levels"' in page and "listed twice" in page
    missing = browser(cluster_admin).post("/nodes/", LEVELS | {"topology_levels": ""})
    assert missing.status_code == 400 and 'id="err_topology_levels"' in missing.content.decode()
    assert not PoolTopology.objects.exists()


def test_r23_4_only_a_cluster_admin_sets_or_removes_a_pools_topology(cluster_admin, owner):
    assert browser(owner).post("/nodes/", LEVELS).status_code == 403
    PoolTopology.objects.create(pool="default", levels=[RACK])
    assert browser(owner).post("/nodes/topology/default/delete/").status_code == 403
    assert browser(cluster_admin).post("/nodes/topology/default/delete/").status_code == 302
    assert not PoolTopology.objects.exists()
    assert browser(cluster_admin).post("/nodes/topology/default/delete/").status_code == 404
