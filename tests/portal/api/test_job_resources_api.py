"""CPU, memory and GPU-memory requests over REST (issue 26): Kubernetes quantities in and out,
project and cluster defaults, and a 400 naming the field for every bad value."""

from __future__ import annotations

import pytest
from django.test import override_settings

from portal.jobs.models import Job

URL = "/api/v1/jobs/"


@pytest.fixture
def client(api, member, nodes):
    return api(member)


def post(client, **fields):
    body = {"project": "team-a", "name": "train-1", "gpus": 1, **fields}
    return client.post(URL, body, format="json")


def rejected(response, field: str) -> str:
    assert response.status_code == 400, response.content
    assert not Job.objects.exists()
    return " ".join(response.json()[field])


def test_it_takes_kubernetes_quantities_and_gives_them_back_with_the_numbers(client):
    response = post(client, cpu="500m", memory="16Gi", cpu_limit="2", memory_limit="20Gi")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["cpu"], body["cpu_millis"]) == ("500m", 500)
    assert (body["memory"], body["memory_mib"]) == ("16Gi", 16384)
    assert (body["cpu_limit"], body["cpu_limit_millis"]) == ("2", 2000)
    assert (body["memory_limit"], body["memory_limit_mib"]) == ("20Gi", 20480)
    job = Job.objects.get()
    assert (job.cpu_millis, job.memory_bytes, job.cpu_limit_millis) == (500, 16 * 2**30, 2000)
    assert client.get(f"{URL}team-a/train-1/").json()["cpu"] == "500m"


def test_a_json_number_of_cpu_is_cores(client):
    assert post(client, cpu=2.5).json()["cpu_millis"] == 2500


@pytest.mark.parametrize(
    ("memory", "size", "mib", "shown"),
    [("512Mi", 512 * 2**20, 512, "512Mi"), ("1.5Gi", 3 * 2**29, 1536, "1536Mi"),
     ("1G", 10**9, 954, "1G"), ("1Ki", 1024, 1, "1Ki"),
     ("999Ti", 999 * 2**40, 999 * 2**20, "999Ti"),
     # issue 33: every form Kubernetes takes, a bare number being bytes, kept to the byte
     ("2000", 2000, 1, "2k"), (2000, 2000, 1, "2k"), ("50M", 50 * 10**6, 48, "50M"),
     ("500m", 1, 1, "1"), ("1e3", 1000, 1, "1k"), ("1001", 1001, 1, "1001")],
)  # fmt: skip
def test_memory_takes_every_kubernetes_form_exactly(client, memory, size, mib, shown):
    # `memory_mib` stays the whole MiB (rounded up) it always answered, for existing clients
    body = post(client, memory=memory).json()
    assert (body["memory_mib"], body["memory"]) == (mib, shown)
    assert Job.objects.get(name="train-1").memory_bytes == size


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("cpu", "-1", "'-1' is not a CPU quantity (cores, e.g. 2 or 500m)"),
        ("cpu", "two", "'two' is not a CPU quantity"),
        ("cpu", True, "is not a CPU quantity"),
        ("memory", "16GB", "'16GB' is not a memory quantity (bytes or a number with a unit"),
        ("memory", -16, "-16 is not a memory quantity"),
        ("memory", 1.5, "1.5 is not a memory quantity"),  # a JSON number is whole bytes
        ("memory", "-2Gi", "is not a memory quantity"),
        ("cpu_limit", "1e40", "is not a CPU quantity"),
        ("memory_limit", "99999999Ti", "Memory '99999999Ti' is too large"),  # beyond the column
        ("cpu", 1_000_000, "is not a CPU quantity"),
        ("cpu", "1k", "is not a CPU quantity"),
        ("gpu_memory", "lots", "is not a memory quantity"),
    ],
)
def test_it_rejects_a_bad_quantity_under_its_field(client, field, value, words):
    assert words in rejected(post(client, **{field: value}), field)


def test_a_limit_below_its_request_is_a_400(client):
    assert "at least the cpu request" in rejected(post(client, cpu="2", cpu_limit="1"), "cpu_limit")
    assert "at least the memory request" in rejected(
        post(client, memory="8Gi", memory_limit="4Gi"), "memory_limit"
    )


def test_a_cpu_only_job_asks_for_cpu_and_holds_no_gpu(client):
    response = post(client, gpus=0, cpu="4")
    assert response.status_code == 201, response.content
    assert (response.json()["gpus"], response.json()["cpu_millis"]) == (0, 4000)


def test_zero_gpus_without_cpu_or_memory_is_a_400(client):
    assert "CPU-only job" in rejected(post(client, gpus=0), "gpus")


def test_gpu_memory_is_a_share_of_the_smallest_device(client):
    body = {"project": "team-a", "name": "frac", "gpu_memory": "20Gi"}
    response = client.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["gpu_memory"], body["gpu_memory_mib"]) == ("20Gi", 20480)
    assert body["gpus"] == 0.63  # 20 GiB of a 32 GiB V100, rounded up to the hundredth


@pytest.mark.parametrize("memory", ["32Gi", "34359738368", 34359738368, "32768Mi", "0.03125Ti"])
def test_gpu_memory_of_a_whole_device_is_one_gpu(client, memory):
    # issue 33: KAI counts a GPU-memory request of the whole device as 1 GPU, Allot counted 0.99
    body = {"project": "team-a", "name": "whole", "gpu_memory": memory}
    response = client.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    assert (response.json()["gpus"], response.json()["gpu_memory"]) == (1, "32Gi")


def test_gpu_memory_and_gpus_together_is_a_400(client):
    assert "not both" in rejected(post(client, gpus=0.5, gpu_memory="8Gi"), "gpu_memory")


def test_neither_gpus_nor_gpu_memory_is_a_400(client):
    response = client.post(URL, {"project": "team-a", "name": "x"}, format="json")
    assert "required" in rejected(response, "gpus")


def test_the_project_default_applies_when_the_job_does_not_say(client, team_a):
    team_a.default_cpu_millis, team_a.default_memory_bytes = 4000, 8 * 2**30
    team_a.save()
    body = post(client).json()
    assert (body["cpu"], body["memory"]) == ("4", "8Gi")
    body = post(client, name="own", cpu="1", memory="1Gi").json()
    assert (body["cpu"], body["memory"]) == ("1", "1Gi")


@override_settings(ALLOT_DEFAULT_CPU_MILLIS=1000, ALLOT_DEFAULT_MEMORY_BYTES=2 * 2**30)
def test_the_cluster_default_applies_when_the_project_sets_none(client):
    body = post(client).json()
    assert (body["cpu_millis"], body["memory_mib"]) == (1000, 2048)


def test_a_limit_alone_makes_the_request_the_limit(client):
    body = post(client, cpu_limit="3", memory_limit="6Gi").json()
    assert (body["cpu_millis"], body["memory_mib"]) == (3000, 6144)


def test_more_cpu_than_any_node_is_accepted_with_a_warning(client, nodes):
    for node in nodes:
        node.cpu_millis = 16000
        node.save()
    response = post(client, cpu="64")
    assert response.status_code == 201, response.content
    assert "no node has 64 cores allocatable today (the largest has 16 cores)" in str(
        response.json()["warnings"]
    )


def test_an_admin_sets_a_projects_defaults_and_limits(api, cluster_admin, team_a):
    response = api(cluster_admin).patch(
        "/api/v1/projects/team-a/",
        {"default_cpu": "2", "default_memory": "8Gi", "cpu_limit": "64", "memory_limit": "512Gi"},
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["default_cpu"], body["cpu_limit"], body["memory_limit"]) == ("2", "64", "512Gi")
    team_a.refresh_from_db()
    assert (team_a.default_cpu_millis, team_a.memory_limit_bytes) == (2000, 512 * 2**30)
    bad = api(cluster_admin).patch("/api/v1/projects/team-a/", {"cpu_limit": "x"}, format="json")
    assert bad.status_code == 400 and "is not a CPU quantity" in str(bad.json()["cpu_limit"])


def test_a_member_cannot_change_the_defaults(api, member):
    response = api(member).patch("/api/v1/projects/team-a/", {"default_cpu": "64"}, format="json")
    assert response.status_code == 403


def test_a_project_admin_cannot_change_the_defaults_over_the_api(api, owner, team_a):
    response = api(owner).patch("/api/v1/projects/team-a/", {"cpu_limit": "64"}, format="json")
    assert response.status_code == 403, response.content
    team_a.refresh_from_db()
    assert team_a.cpu_limit_millis is None


def test_gpu_memory_is_more_than_zero_and_never_null_as_the_schema_says(client):
    """The schema's pattern for gpu_memory leaves zero out and its request is not nullable, so
    schemathesis' positive and negative checks agree with what the API takes (issue 22 item 9)."""
    body = {"project": "team-a", "name": "frac"}
    for zero in ("0Ki", "0.000Gi", "00Mi"):
        answer = client.post(URL, {**body, "gpu_memory": zero}, format="json")
        assert rejected(answer, "gpu_memory") == "must be more than 0"
    assert "null" in rejected(client.post(URL, {**body, "gpu_memory": None}, format="json"),
                              "gpu_memory")  # fmt: skip
    schema = client.get("/api/schema/?format=json").json()["components"]["schemas"]
    request, answer = schema["JobRequest"]["properties"], schema["Job"]["properties"]
    by_text = request["gpu_memory"]["oneOf"][0]
    assert "nullable" not in request["gpu_memory"] and "(?!" in by_text["pattern"]
    assert request["gpu_memory"]["oneOf"][1]["minimum"] == 1
    assert answer["gpu_memory"]["nullable"] is True
    made = client.post(URL, {**body, "gpu_memory": "10Gi"}, format="json")
    assert made.status_code == 201, made.content
    assert client.get(f"{URL}team-a/train-1/").status_code == 404  # (another name)
    assert post(client).json()["gpu_memory"] is None  # asked by gpus: null in the answer
