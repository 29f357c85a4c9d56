"""Issue 26 on the pages: the submit form's CPU, memory and GPU-memory fields, the project
page's defaults and limits (cluster admins only), and the node page's allocatable CPU and
memory - each error the API's, under its field."""

import pytest
from django.test import Client

from portal.cluster.models import Node
from portal.jobs.models import Job
from portal.tenancy.models import Project

pytestmark = pytest.mark.django_db
BASE = {"project": "team-a", "name": "ok-name", "gpus": "1", "pods": "1", "type": "train"}


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_submit_form_stores_cpu_memory_and_limits(member, nodes):
    form = BASE | {"cpu": "500m", "memory": "16Gi", "cpu_limit": "2", "memory_limit": "20Gi"}
    response = browser(member).post("/jobs/new/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    job = Job.objects.get(name="ok-name")
    assert (job.cpu_millis, job.memory_bytes, job.cpu_limit_millis, job.memory_limit_bytes) == (
        500, 16 * 2**30, 2000, 20 * 2**30)  # fmt: skip
    page = browser(member).get("/jobs/team-a/ok-name/").content.decode()
    assert "0.5 cores (limit 2 cores), 16 GiB (limit 20 GiB)" in page


def test_the_submit_form_asks_by_gpu_memory_when_gpus_is_empty(member, nodes):
    form = BASE | {"gpus": "", "gpu_memory": "16Gi"}
    assert browser(member).post("/jobs/new/", form).status_code == 302
    assert float(Job.objects.get(name="ok-name").gpus) == 0.5


@pytest.mark.parametrize(
    ("form", "field", "said"),
    [
        ({"cpu": "-1"}, "cpu", "&#x27;-1&#x27; is not a CPU quantity (cores, e.g. 2 or 500m)"),
        ({"memory": "lots"}, "memory", "is not a memory quantity"),
        ({"gpu_memory": "8Gi"}, "gpu_memory", "give GPUs per pod or GPU memory per pod, not both"),
        ({"gpus": "0"}, "gpus", "0 for a CPU-only job"),
    ],
)
def test_a_bad_request_is_said_under_its_field(member, nodes, form, field, said):
    page = browser(member).post("/jobs/new/", BASE | form).content.decode()
    assert f'id="err_{field}"' in page and said in page
    assert not Job.objects.exists()


def test_a_cluster_admin_sets_the_project_defaults_and_limits_and_clears_one(cluster_admin, team_a):
    client = browser(cluster_admin)
    form = {"quota": "4", "default_cpu": "2", "default_memory": "8Gi", "cpu_limit": "64",
            "memory_limit": "512Gi"}  # fmt: skip
    assert client.post("/projects/team-a/edit/", form).status_code == 302
    team_a.refresh_from_db()
    assert (team_a.default_cpu_millis, team_a.default_memory_bytes, team_a.cpu_limit_millis,
            team_a.memory_limit_bytes) == (2000, 8 * 2**30, 64000, 512 * 2**30)  # fmt: skip
    page = client.get("/projects/team-a/").content.decode()
    assert "2 cores" in page and "512 GiB memory" in page
    edit = client.get("/projects/team-a/edit/").content.decode()
    assert 'value="8Gi"' in edit
    assert client.post("/projects/team-a/edit/", form | {"cpu_limit": ""}).status_code == 302
    assert Project.objects.get(name="team-a").cpu_limit_millis is None
    bad = client.post("/projects/team-a/edit/", form | {"default_cpu": "two"}).content.decode()
    assert "is not a CPU quantity" in bad


def test_a_project_admin_cannot_change_the_defaults(owner, team_a):
    response = browser(owner).post("/projects/team-a/edit/", {"default_cpu": "64"})
    assert response.status_code == 403
    team_a.refresh_from_db()
    assert team_a.default_cpu_millis is None


def test_a_cluster_admin_sets_a_nodes_allocatable_cpu_and_memory(cluster_admin, nodes):
    client = browser(cluster_admin)
    client.post("/nodes/dgx1-1/", {"action": "allocatable", "cpu": "63500m", "memory": "500Gi"})
    node = Node.objects.get(name="dgx1-1")
    assert (node.cpu_millis, node.memory_bytes) == (63500, 500 * 2**30)
    page = client.get("/nodes/").content.decode()
    assert "0 cores / 63.5 cores" in page and "500 GiB" in page
    client.post("/nodes/dgx1-1/", {"action": "allocatable", "cpu": "", "memory": ""})
    assert Node.objects.get(name="dgx1-1").cpu_millis is None
    page = client.post("/nodes/dgx1-1/", {"action": "allocatable", "cpu": "x"}, follow=True)
    assert "is not a CPU quantity" in page.content.decode()


def test_adding_a_node_with_a_bad_cpu_answers_400_with_the_error_under_the_field(
    cluster_admin, nodes
):
    form = {"name": "dgx1-9", "gpus": "8", "gpu_memory_mib": "32768", "pool": "default"}
    response = browser(cluster_admin).post("/nodes/", form | {"cpu": "lots"})
    assert response.status_code == 400  # the page again, as every form with errors
    assert "is not a CPU quantity" in response.content.decode()
    assert not Node.objects.filter(name="dgx1-9").exists()
    response = browser(cluster_admin).post("/nodes/", form | {"cpu": "64"})
    assert response.status_code == 302
    assert Node.objects.get(name="dgx1-9").cpu_millis == 64000
