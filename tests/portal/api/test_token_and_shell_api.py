"""`allot login` with a password and `allot bash`: the two endpoints the CLI needs besides jobs."""

import pytest

pytestmark = pytest.mark.django_db


def test_a_username_and_password_give_a_new_token_each_time_and_the_first_still_works(api, member):
    login = {"username": "bob", "password": "x-test-password-1"}
    first = api().post("/api/v1/auth/token/", login, format="json")
    assert first.status_code == 200, first.content
    again = api().post("/api/v1/auth/token/", login, format="json")
    assert first.json()["token"] != again.json()["token"]
    assert first.json()["username"] == again.json()["username"] == "bob"
    for answer in (first, again):
        client = api()
        client.credentials(HTTP_AUTHORIZATION=f"Token {answer.json()['token']}")
        assert client.get("/api/v1/projects/").status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        {"username": "bob", "password": "wrong"},
        {"username": "nobody", "password": "x-test-password-1"},
    ],
)
def test_a_wrong_username_or_password_is_a_401_with_a_challenge_not_saying_which(api, member, body):
    response = api().post("/api/v1/auth/token/", body, format="json")
    assert response.status_code == 401
    assert response.json() == {"detail": "wrong username or password"}
    assert response["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"password": "x"}, "username"),
        ({"username": "bob"}, "password"),
    ],
)
def test_a_bad_login_is_a_400_naming_the_field(api, member, body, field):
    response = api().post("/api/v1/auth/token/", body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert "token" not in response.json()


def submit(client, **fields):
    body = {"project": "team-a", "name": "shelly", "gpus": 1, **fields}
    response = client.post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 201, response.content


def test_a_shell_in_a_pending_job_is_a_409_naming_its_status(api, member, nodes):
    client = api(member)
    submit(client)
    response = client.post("/api/v1/jobs/team-a/shelly/shell/")
    assert response.status_code == 409
    assert "Pending" in response.json()["status"][0]


def test_the_simulated_cluster_says_it_has_no_shells(api, member, cluster_admin, nodes):
    client = api(member)
    submit(client)
    api(cluster_admin).post("/api/v1/scheduler/cycles/")
    assert client.get("/api/v1/jobs/team-a/shelly/").json()["status"] == "Running"
    response = client.post("/api/v1/jobs/team-a/shelly/shell/")
    assert response.status_code == 409
    assert "simulated cluster" in response.json()["detail"][0]


def test_an_agent_with_shells_gives_the_websocket_of_the_jobs_first_pod(
    api, member, cluster_admin, nodes, monkeypatch
):
    from portal.scheduling.agent import get_agent

    client = api(member)
    submit(client)
    api(cluster_admin).post("/api/v1/scheduler/cycles/")
    monkeypatch.setattr(get_agent(), "supports_shell", True)  # as the Kubernetes agent
    response = client.post("/api/v1/jobs/team-a/shelly/shell/")
    assert response.status_code == 200, response.content
    assert response.json() == {"websocket": "/ws/jobs/team-a/shelly/shell/", "pod": "shelly-0"}


def test_viewers_may_not_open_shells_and_outsiders_do_not_see_the_job(
    api, member, viewer, outsider, nodes
):
    submit(api(member))
    assert api(viewer).post("/api/v1/jobs/team-a/shelly/shell/").status_code == 403
    assert api(outsider).post("/api/v1/jobs/team-a/shelly/shell/").status_code == 404
