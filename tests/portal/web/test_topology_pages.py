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
