"""Issue 22 item 8, the API: mount paths that are not plain absolute directories, two volumes
on one path and a job larger than the whole cluster are 400s naming the field and the figures;
nothing is written. (The pages' side: test_form_validation.py.)"""

import pytest

from portal.jobs.models import Job

pytestmark = pytest.mark.django_db
JOBS = "/api/v1/jobs/"


def job(**fields) -> dict:
    return {"project": "team-a", "name": "j", "gpus": 1} | fields


# --- Volumes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/../../etc", "'..'"),
        ("/data/../etc", "'..'"),
        ("/data\nx", "control characters"),
        ("/data\n", "control characters"),
        ("/data\x1b[2J", "control characters"),
        ("/da\x85ta", "control characters"),
        ("/", "not be / itself"),
        ("data", "absolute"),
        (" /data", "absolute"),
        ("//data", "as /data"),
        ("/data/", "as /data"),
        ("/a/./b", "as /a/b"),
        ("/a//b", "as /a/b"),
    ],
)
def test_a_mount_path_must_be_a_plain_absolute_directory(api, member, nodes, path, reason):
    body = job(volumes=[{"pvc": "data", "mount_path": path}])
    response = api(member).post(JOBS, body, format="json")
    assert response.status_code == 400, response.content
    message = str(response.json()["volumes"])
    assert "mount_path" in message and reason in message, message
    assert not Job.objects.exists()


@pytest.mark.parametrize("path", ["/data", "/mnt/my data", "/data.v2", "/..data", "/a/b-c_d"])
def test_plain_mount_paths_are_accepted(api, member, nodes, path):
    body = job(volumes=[{"pvc": "data", "mount_path": path}])
    assert api(member).post(JOBS, body, format="json").status_code == 201


def test_two_volumes_on_one_path_are_refused(api, member, nodes):
    body = job(volumes=[{"pvc": "one", "mount_path": "/data"},
                        {"pvc": "two", "mount_path": "/data", "read_only": True}])  # fmt: skip
    response = api(member).post(JOBS, body, format="json")
    assert response.status_code == 400
    assert response.json()["volumes"] == ["two volumes are mounted on /data"]
    assert not Job.objects.exists()


# --- A job larger than the cluster (the nodes fixture: 2 x 8 = 16 GPUs) ------------------------


def test_a_job_larger_than_the_whole_cluster_is_a_400_with_the_figures(api, member, nodes):
    response = api(member).post(JOBS, job(gpus=8, pods=1024), format="json")
    assert response.status_code == 400
    assert response.json() == {"pods": [
        "1024 pods of 8 GPUs need 8192 GPUs, more than the whole cluster has (16)"]}  # fmt: skip
    assert not Job.objects.exists()


@pytest.mark.parametrize(("gpus", "pods", "status"),
                         [(8, 3, 400), (8, 2, 201), (0.5, 33, 400), (0.5, 32, 201)])  # fmt: skip
def test_the_whole_cluster_is_the_bound_fractions_included(api, member, nodes, gpus, pods, status):
    response = api(member).post(JOBS, job(gpus=gpus, pods=pods), format="json")
    assert response.status_code == status, response.content


def test_a_job_larger_than_the_room_free_today_is_accepted_and_waits(api, member, cluster_admin,
                                                                      nodes):  # fmt: skip
    admin = api(cluster_admin)
    for name in ("busy-1", "busy-2"):
        body = {"project": "team-a", "name": name, "gpus": 8}
        assert admin.post(JOBS, body, format="json").status_code == 201
    from portal.scheduling.settle import settle

    settle()  # both nodes full
    assert api(member).post(JOBS, job(gpus=8, pods=2), format="json").status_code == 201


def test_a_bulk_submission_names_the_job_too_large(api, member, nodes):
    body = {"jobs": [job(name="ok"), job(name="huge", gpus=8, pods=64)]}
    response = api(member).post("/api/v1/jobs/bulk/", body, format="json")
    assert response.status_code == 400
    assert "more than the whole cluster has (16)" in str(response.json())
    assert not Job.objects.exists()


def test_a_pod_larger_than_every_node_today_is_accepted_waits_and_says_why(
    api, member, nodes, cluster_admin
):
    """Issue 24 item 10: nodes come and go (maintenance, a new DGX arriving), so a 9-GPU pod
    on two 8-GPU nodes is accepted, as Run:AI and KAI accept it, with a warning; it stays
    Pending and its expected start says what it waits for. Only a pod larger than any node type
    (`ALLOT_MAX_GPUS_PER_POD`) is a 400."""
    response = api(member).post(JOBS, job(name="big", gpus=9), format="json")
    assert response.status_code == 201, response.content
    assert response.json()["warnings"] == [
        "no node has 9 GPUs today (the largest has 8): the job waits until one joins"
    ]
    from portal.scheduling import eta
    from portal.scheduling.settle import settle

    settle()
    eta.refresh()
    shown = api(member).get(f"{JOBS}team-a/big/").json()
    assert shown["status"] == "Pending" and shown["warnings"] == []
    assert shown["expected_start"] == (
        "cannot start until a node with 9 GPUs joins: the largest in the cluster has 8 GPUs"
    )
    refused = api(member).post(JOBS, job(name="absurd", gpus=65), format="json")
    assert refused.status_code == 400
    assert "no node type has that many" in str(refused.json()["gpus"])


def test_a_variable_that_would_steer_the_notebook_server_is_refused_naming_it(api, member, nodes):
    """Issue 32 item 1: JUPYTER_CONFIG_PATH=work/cfg in a job's environment loaded a config the
    researcher wrote through the contents API; the server's configuration is the portal's."""
    body = {"project": "team-a", "name": "nb", "gpus": 0.5, "type": "interactive",
            "ports": [8888], "environment": {"JUPYTER_CONFIG_PATH": "work/cfg"}}  # fmt: skip
    answer = api(member).post("/api/v1/jobs/", body, format="json")
    assert answer.status_code == 400
    assert "JUPYTER_CONFIG_PATH" in answer.json()["environment"][0]
