"""POST /api/v1/jobs/ with bad input: a 400/404/409 naming the field, and nothing stored."""

from __future__ import annotations

import pytest

from portal.jobs.models import Job, JobEvent

URL = "/api/v1/jobs/"


@pytest.fixture
def client(api, member, nodes):
    return api(member)


def post(client, **fields):
    body = {"project": "team-a", "name": "train-1", "gpus": 1, **fields}
    return client.post(URL, body, format="json")


def assert_rejected(response, status: int, field: str, words: str = "") -> None:
    assert response.status_code == status, response.content
    body = response.json()
    assert field in body, body
    assert words in str(body[field]), body
    assert not Job.objects.exists()
    assert not JobEvent.objects.exists()


def test_it_rejects_zero_gpus(client):
    assert_rejected(post(client, gpus=0), 400, "gpus", "greater than 0")


def test_it_rejects_negative_gpus(client):
    assert_rejected(post(client, gpus=-1), 400, "gpus", "greater than 0")


def test_it_rejects_one_and_a_half_gpus(client):
    assert_rejected(post(client, gpus=1.5), 400, "gpus", "whole number")


def test_it_rejects_fractions_finer_than_a_hundredth(client):
    assert_rejected(post(client, gpus=0.333), 400, "gpus", "0.01")


def test_it_rejects_more_gpus_in_one_pod_than_any_node_type_has(client):
    assert_rejected(post(client, gpus=65), 400, "gpus", "no node type has that many (at most 64")


def test_it_rejects_gpus_as_a_string(client):
    assert_rejected(post(client, gpus="one"), 400, "gpus", "must be a number")


def test_it_rejects_a_numeric_string_for_gpus(client):
    assert_rejected(post(client, gpus="1"), 400, "gpus", "must be a number")


def test_it_rejects_1e308_gpus(client):
    assert_rejected(post(client, gpus=1e308), 400, "gpus", "no node type has that many")


def test_it_rejects_boolean_gpus(client):
    assert_rejected(post(client, gpus=True), 400, "gpus", "must be a number")


def test_it_requires_gpus(client):
    response = client.post(URL, {"project": "team-a", "name": "x"}, format="json")
    assert_rejected(response, 400, "gpus", "required")


def test_it_rejects_zero_pods(client):
    assert_rejected(post(client, pods=0), 400, "pods", "greater than or equal to 1")


def test_it_rejects_an_empty_name(client):
    assert_rejected(post(client, name=""), 400, "name", "blank")


def test_it_rejects_a_name_longer_than_40_characters(client):
    assert_rejected(post(client, name="a" * 41), 400, "name", "40")


def test_it_accepts_a_name_of_exactly_40_characters(client):
    assert post(client, name="a" * 40).status_code == 201


@pytest.mark.parametrize("name", ["Train", "train_1", "-train", "train-", "a.b", "träin"])
def test_it_rejects_names_that_are_not_dns_labels(client, name):
    assert_rejected(post(client, name=name), 400, "name", "DNS label")


def test_it_rejects_html_in_the_name(client):
    assert_rejected(post(client, name="<script>alert(1)</script>"), 400, "name", "DNS label")


def test_it_answers_404_for_an_unknown_project(client):
    assert_rejected(post(client, project="no-such-team"), 404, "project", "not found")


def test_it_rejects_an_unknown_type(client):
    assert_rejected(post(client, type="inference"), 400, "type", "not a valid choice")


def test_it_rejects_an_out_of_range_priority(client):
    assert_rejected(post(client, priority=50), 400, "priority", "49")


def test_it_rejects_an_invalid_port(client):
    assert_rejected(post(client, ports=[70000]), 400, "ports", "65535")


def test_it_rejects_an_environment_variable_with_a_bad_name(client):
    assert_rejected(post(client, environment={"1BAD": "x"}), 400, "environment", "1BAD")


def test_it_rejects_a_volume_with_a_relative_mount_path(client):
    response = post(client, volumes=[{"pvc": "data", "mount_path": "data"}])
    assert_rejected(response, 400, "volumes", "absolute path")


def test_it_rejects_an_unknown_service_type(client):
    assert_rejected(post(client, service_type="magic"), 400, "service_type", "valid choice")


def test_it_rejects_a_command_that_is_not_a_list(client):
    assert_rejected(post(client, command="python train.py"), 400, "command", "list")


def test_it_rejects_malformed_json(client):
    response = client.post(URL, '{"project": "team-a", "gpus": ', content_type="application/json")
    assert_rejected(response, 400, "body", "JSON parse error")


def test_it_rejects_a_json_array_body(client):
    response = client.post(URL, [1, 2], format="json")
    assert_rejected(response, 400, "non_field_errors", "dictionary")


def test_it_rejects_a_duplicate_job_name_with_409(client):
    assert post(client).status_code == 201
    response = post(client, gpus=0.5)
    assert response.status_code == 409, response.content
    assert "already exists" in response.json()["name"][0]
    assert Job.objects.count() == 1


def test_it_allows_the_same_job_name_in_another_project(api, cluster_admin, nodes, team_a, team_b):
    client = api(cluster_admin)
    assert post(client, project="team-a").status_code == 201
    assert post(client, project="team-b").status_code == 201


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('{"project": "team-a", "name": "j", "gpus": 1, "args": ["a\\u0000b"]}', "args[0]"),
        ('{"project": "team-a", "name": "j", "gpus": 1, "environment": {"K\\u0000": "v"}}', "key"),
        ('{"project": "team-a", "name": "j", "gpus": 1, "command": ["\\ud800"]}', "surrogate"),
    ],
)
def test_it_rejects_text_the_database_cannot_store(client, body, words):
    response = client.post(URL, body, content_type="application/json")
    assert response.status_code == 400
    assert words in response.json()["body"][0]
    assert Job.objects.count() == 0


@pytest.mark.parametrize(("environment", "words"), [
    ({"RANK": "0"}, "RANK is set by Allot for each pod of a job of several pods"),
    ({"SEED": "1", "MASTER_ADDR": "10.0.0.1"}, "MASTER_ADDR is set by Allot"),
    ({"MASTER_PORT": "70000"}, "MASTER_PORT must be a port number, 1 to 65535"),
    ({"MASTER_PORT": "twenty"}, "MASTER_PORT must be a port number"),
])  # fmt: skip
def test_it_rejects_rendezvous_variables_a_gang_is_given(client, environment, words):
    assert_rejected(post(client, pods=2, environment=environment), 400, "environment", words)


def test_a_gang_may_choose_its_master_port_and_one_pod_its_rank(client):
    answer = post(client, pods=2, environment={"MASTER_PORT": "23456"})
    assert answer.status_code == 201, answer.content
    answer = post(client, name="single", environment={"RANK": "0"})  # not a gang: as before
    assert answer.status_code == 201, answer.content
