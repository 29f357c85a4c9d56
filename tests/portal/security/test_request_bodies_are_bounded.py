"""Issue 22 item 5: a deeply nested or oversized JSON body is a 400 that names the problem under
`body`, as JSON, on every JSON endpoint (signed in or not), never a 500 or an HTML page."""

import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db

DEEP_ARRAY = "[" * 1000 + "]" * 1000
DEEP_OBJECT = '{"a":' * 1000 + "1" + "}" * 1000
TOKEN, JOBS, BULK = "/api/v1/auth/token/", "/api/v1/jobs/", "/api/v1/jobs/bulk/"


def assert_body_error(response, words: str) -> None:
    assert response.status_code == 400, response.content[:300]
    assert response["Content-Type"] == "application/json"
    assert any(words in reason for reason in response.json()["body"]), response.json()


@pytest.mark.parametrize("body", [DEEP_ARRAY, DEEP_OBJECT], ids=["array", "object"])
def test_a_thousand_deep_body_to_the_login_is_a_400_naming_the_depth(api, body):
    assert_body_error(api().post(TOKEN, body, content_type="application/json"), "deeper than 64")


@pytest.mark.parametrize("body", [DEEP_ARRAY, DEEP_OBJECT], ids=["array", "object"])
def test_a_thousand_deep_submission_is_a_400_naming_the_depth(api, member, nodes, body):
    response = api(member).post(JOBS, body, content_type="application/json")
    assert_body_error(response, "deeper than 64")


def test_depth_inside_a_valid_looking_job_is_refused_too(api, member, nodes):
    env = "1"
    for _ in range(100):
        env = '{"x": ' + env + "}"
    body = '{"project": "team-a", "name": "deep", "gpus": 1, "environment": ' + env + "}"
    assert_body_error(api(member).post(JOBS, body, content_type="application/json"), "deeper")
    from portal.jobs.models import Job

    assert not Job.objects.exists()


def test_a_far_deeper_body_than_the_interpreter_goes_is_a_400_too(api, member, nodes):
    body = "[" * 200_000 + "]" * 200_000
    assert_body_error(api(member).post(BULK, body, content_type="application/json"), "deeper")


def test_sixty_four_levels_are_still_read(api, member, nodes):
    body = "[" * 64 + "]" * 64  # the right depth, the wrong shape: the serializer's 400
    response = api(member).post(JOBS, body, content_type="application/json")
    assert response.status_code == 400 and "body" not in response.json()


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=4096)
def test_a_body_over_the_limit_is_a_json_400_naming_the_body(api, member, nodes):
    body = '{"project": "team-a", "name": "big", "gpus": 1, "environment": {"A": "' + (
        "x" * 5000) + '"}}'  # fmt: skip
    for client, url in ((api(), TOKEN), (api(member), JOBS), (api(member), BULK)):
        response = client.post(url, body, content_type="application/json")
        assert_body_error(response, "larger than 4096 bytes")


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=4096)
def test_the_parser_reads_no_more_than_the_limit_from_a_stream():
    """Under a real server DRF hands the parser the request's stream: it stops at the limit."""
    import io

    from rest_framework.exceptions import ParseError

    from portal.api.parsers import StorableJSONParser

    stream = io.BytesIO(b'"' + b"x" * 100_000 + b'"')
    with pytest.raises(ParseError, match="larger than 4096 bytes"):
        StorableJSONParser().parse(stream)
    assert stream.tell() == 4097
