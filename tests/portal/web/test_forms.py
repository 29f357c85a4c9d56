"""Forms say what the REST API says, next to the field; nothing is half-written."""

from decimal import Decimal

import pytest
from django.http import HttpRequest
from django.test import Client

from portal.jobs.models import Job
from portal.tenancy.models import Membership, Project
from portal.web.forms import in_labels
from portal.web.job_pages import JOB_LABELS

pytestmark = pytest.mark.django_db


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def api_error(api, user, path, body, field):
    response = api(user).post(path, body, format="json")
    assert response.status_code == 400, response.content
    return response.json()[field][0]


@pytest.mark.parametrize(
    ("form", "field"),
    [
        ({"gpus": "-1"}, "gpus"),
        ({"gpus": "0.3333"}, "gpus"),
        ({"gpus": "65"}, "gpus"),
        ({"name": "Not A Label"}, "name"),
        ({"image": "bad image!"}, "image"),
        ({"pods": "0"}, "pods"),
    ],
)
def test_the_submit_form_shows_the_apis_message_next_to_the_field(api, member, nodes, form, field):
    base = {"project": "team-a", "name": "ok-name", "gpus": "1", "pods": "1", "type": "train"}
    response = browser(member).post("/jobs/new/", base | form)
    assert response.status_code == 200
    body = dict(base | form)
    body["pods"], body["gpus"] = int(body["pods"]), float(body["gpus"])
    message = api_error(api, member, "/api/v1/jobs/", body, field)
    page = response.content.decode()
    assert f'id="err_{field}"' in page
    from html import escape

    # the same message, in the form's words (issue 34 item 5)
    assert escape(in_labels({field: [message]}, JOB_LABELS)[field][0]) in page
    assert not Job.objects.exists()


def test_the_submit_form_names_its_own_fields_not_the_apis(member, nodes):
    """ "give gpus or gpu_memory, not both" named fields the form does not have (issue 34 item
    5); prose such as "CPU-only" or "40 GiB memory" stays as written."""
    errors = {"gpu_memory": ["give gpus or gpu_memory, not both"],
              "cpu_limit": ["must be at least the cpu request"],
              "gpus": ["0 for a CPU-only job that asks for cpu or memory"],
              "memory": ["no node has 40 GiB memory allocatable"]}  # fmt: skip
    assert in_labels(errors, JOB_LABELS) == {
        "gpu_memory": ["give GPUs per pod or GPU memory per pod, not both"],
        "cpu_limit": ["must be at least the CPU per pod"],
        "gpus": ["0 for a CPU-only job that asks for CPU per pod or Memory per pod"],
        "memory": ["no node has 40 GiB memory allocatable"],
    }


@pytest.mark.parametrize(("by", "stored"), [("gpu_memory", (20 * 2**30, Decimal("0.63"))),
                                            ("gpus", (None, Decimal(1)))])  # fmt: skip
def test_the_submit_form_sends_the_gpu_field_its_choice_names(member, nodes, by, stored):
    """Both fields filled (the pre-filled GPUs and 20Gi): the "Ask for" choice says which one is
    meant, without JavaScript too; before, this was "give gpus or gpu_memory, not both"."""
    response = browser(member).post(
        "/jobs/new/",
        {"project": "team-a", "name": "by", "gpus": "1", "gpu_memory": "20Gi", "gpus_by": by},
    )
    assert response.status_code == 302, response.content.decode()
    job = Job.objects.get(name="by")
    assert (job.gpu_memory_bytes, job.gpus) == stored


def test_gpu_memory_chosen_but_not_given_is_named_in_the_forms_words(member, nodes):
    response = browser(member).post(
        "/jobs/new/",
        {"project": "team-a", "name": "by", "gpus": "1", "gpu_memory": "", "gpus_by": "gpu_memory"},
    )
    page = response.content.decode()
    assert 'id="err_gpu_memory"' in page and "give the GPU memory each pod needs" in page
    assert not Job.objects.exists()


def test_the_forms_preselect_the_users_project_not_the_first(team_a, team_b, cluster_admin):
    """A cluster admin may submit anywhere: the forms choose the project they are a member of
    (team-b, not team-a, the first by name), then the project of their last job."""
    Membership.objects.create(user=cluster_admin, project=team_b, role="researcher")
    client = browser(cluster_admin)
    for path in ("/jobs/new/", "/jupyter/new/"):
        assert client.get(path).context["values"]["project"] == "team-b"
    Job.objects.create(project=team_a, user=cluster_admin, name="last", gpus=1)
    for path in ("/jobs/new/", "/jupyter/new/"):
        assert client.get(path).context["values"]["project"] == "team-a"
    assert client.get("/jobs/new/?project=team-b").context["values"]["project"] == "team-b"


def test_the_submit_form_submits_fractions_ports_env_and_volumes(member, nodes):
    response = browser(member).post("/jobs/new/", {
        "project": "team-a", "name": "nb", "gpus": "0.5", "pods": "1", "type": "interactive",
        "image": "jupyter/base-notebook", "command": "start.sh jupyter lab", "args": "--debug",
        "environment": "A=1\nB=two words", "ports": "8888", "service_type": "ingress",
        "volumes": "test:/tmp/pvc1mount",
    })  # fmt: skip
    assert response.status_code == 302
    job = Job.objects.get(name="nb")
    assert (float(job.gpus), job.type, job.ports) == (0.5, "interactive", [8888])
    assert job.command == ["start.sh", "jupyter", "lab"] and job.args == ["--debug"]
    assert job.environment == {"A": "1", "B": "two words"}
    assert job.volumes == [{"pvc": "test", "mount_path": "/tmp/pvc1mount", "read_only": False}]
    assert response["Location"] == "/jobs/team-a/nb/"


def test_a_bad_environment_line_is_named(member, nodes):
    response = browser(member).post("/jobs/new/", {"project": "team-a", "name": "x", "gpus": "1",
                                                   "environment": "NOEQUALS"})  # fmt: skip
    assert "is not KEY=VALUE" in response.content.decode()


@pytest.mark.parametrize(("given", "seconds"), [("90m", 5400), ("2H", 7200), ("1 d", 86400),
                                                ("600", 600)])  # fmt: skip
def test_the_submit_form_takes_an_estimated_run_time_as_a_duration(member, nodes, given, seconds):
    response = browser(member).post("/jobs/new/", {"project": "team-a", "name": "est",
                                                   "gpus": "1", "estimate_s": given})  # fmt: skip
    assert response.status_code == 302
    assert Job.objects.get(name="est").estimate_s == seconds


@pytest.mark.parametrize(("given", "message"), [
    ("soon", "must be a duration such as 90m, 2h or 1d, not &#x27;soon&#x27;"),
    ("1.5h", "must be a duration such as 90m, 2h or 1d"),
    ("0", "Ensure this value is greater than or equal to 1."),
    ("400d", "Ensure this value is less than or equal to 31536000."),
])  # fmt: skip
def test_a_bad_estimated_run_time_is_named_next_to_the_field(member, nodes, given, message):
    response = browser(member).post("/jobs/new/", {"project": "team-a", "name": "est",
                                                   "gpus": "1", "estimate_s": given})  # fmt: skip
    page = response.content.decode()
    assert response.status_code == 200 and 'id="err_estimate_s"' in page and message in page
    assert not Job.objects.exists()


def test_launch_jupyter_creates_an_interactive_job_on_port_8888(member, nodes):
    form = {"project": "team-a", "gpus": "0.5", "image": "jupyter/base-notebook"}
    response = browser(member).post("/jupyter/new/", form)
    assert response.status_code == 302
    job = Job.objects.get(project__name="team-a")
    assert (job.type, job.ports, float(job.gpus)) == ("interactive", [8888], 0.5)
    assert job.name == "jupyter-bob"


def test_the_project_form_shows_the_apis_limit_message(api, cluster_admin, nodes):
    response = browser(cluster_admin).post("/projects/new/", {"name": "team-e", "quota": "4",
                                                              "limit": "2"})  # fmt: skip
    assert response.status_code == 400  # the form again, as the submit and department forms
    assert "must be at least the quota" in response.content.decode()
    assert not Project.objects.filter(name="team-e").exists()


def test_an_admin_creates_a_project_and_adds_a_researcher(cluster_admin, member, nodes):
    client = browser(cluster_admin)
    response = client.post("/projects/new/", {"name": "team-e", "quota": "2"})
    assert response.status_code == 302 and response["Location"] == "/projects/team-e/"
    client.post("/projects/team-e/members/", {"username": "bob", "role": "researcher"})
    assert Membership.objects.get(project__name="team-e", user=member).role == "researcher"
    duplicate = client.post("/projects/team-e/members/", {"username": "bob"}, follow=True)
    assert "already a member" in duplicate.content.decode()
    missing = client.post("/projects/team-e/members/", {"username": "nobody"}, follow=True)
    assert "no user named" in missing.content.decode()


def test_users_page_creates_users_and_checks_passwords(cluster_admin):
    client = browser(cluster_admin)
    weak = client.post("/users/", {"username": "carol", "password": "123"})
    assert weak.status_code == 200 and "too short" in weak.content.decode()
    ok = client.post("/users/", {"username": "carol", "password": "a-long-password-9"})
    assert ok.status_code == 302
    reset = client.post("/users/carol/password/", {"password": "another-long-pass-7"}, follow=True)
    assert "New password set for carol" in reset.content.decode()
    # the request: every sign-in goes through django-axes, which needs one
    assert Client().login(request=HttpRequest(), username="carol", password="another-long-pass-7")


def test_my_page_shows_a_new_token_once_and_revokes_it(member, api):
    import re

    from portal.tenancy.models import ApiToken

    client = browser(member)
    created = client.post("/me/", {"action": "create-token", "name": "laptop"}).content.decode()
    key = re.search(r'id="new-token"[^>]* value="([^"]+)"', created)[1]
    assert key not in client.get("/me/").content.decode()  # shown once
    client.post("/me/", {"action": "revoke-token", "token": ApiToken.objects.get(user=member).pk})
    anonymous = api()
    anonymous.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    refused = anonymous.get("/api/v1/projects/")
    assert refused.status_code == 401 and "Token revoked" in refused.json()["detail"]


def test_stop_frees_the_gpus_and_keeps_the_job_and_its_events(api, member, nodes):
    from portal.jobs.models import JobEvent, Status
    from portal.scheduling.settle import settle

    api(member).post("/api/v1/jobs/", {"project": "team-a", "name": "j", "gpus": 2}, format="json")
    settle()
    response = browser(member).post("/jobs/team-a/j/stop/")
    assert response.status_code == 302 and response.url == "/jobs/team-a/j/"
    job = Job.objects.get(name="j")
    assert (job.status, job.allocated_gpus) == (Status.STOPPED, 0.0)
    assert list(JobEvent.objects.filter(job=job).values_list("kind", flat=True))[-1] == "stopped"
    deleted = browser(member).post("/jobs/team-a/j/delete/")
    assert deleted.status_code == 302 and not Job.objects.filter(name="j").exists()
    assert JobEvent.objects.filter(job_name="j", kind="deleted").exists()


def test_a_project_admin_adds_and_removes_a_webhook_and_sees_its_secret_once(owner):
    from portal.notify.models import Webhook

    client = browser(owner)
    added = client.post("/projects/team-a/webhooks/", {"url": "https://hooks.example.org/a"},
                        follow=True).content.decode()  # fmt: skip
    webhook = Webhook.objects.get(project__name="team-a")
    assert webhook.secret in added and "https://hooks.example.org/a" in added
    assert webhook.secret not in client.get("/projects/team-a/").content.decode()
    bad = client.post("/projects/team-a/webhooks/", {"url": "not a url"}, follow=True)
    assert "url: Enter a valid URL." in bad.content.decode()
    client.post(f"/projects/team-a/webhooks/{webhook.id}/delete/")
    assert not Webhook.objects.exists()


def test_my_notification_settings_are_saved(member):
    from portal.notify.models import Preference

    client = browser(member)
    client.post("/me/", {"action": "notifications", "browser": "on"})
    preference = Preference.objects.get(user=member)
    assert (preference.email, preference.browser) == (False, True)
    page = client.get("/me/").content.decode()
    assert 'name="email" checked' not in page and 'name="browser" checked' in page


# --- form_input: each kind of field, read on its own ---------------------------------------


def read(kinds: dict, **post) -> tuple[dict, dict]:
    from django.http import QueryDict

    from portal.web.forms import form_input

    query = QueryDict(mutable=True)
    query.update(post)
    return form_input(query, kinds)


def test_form_input_reads_every_kind_of_field():
    from portal.web import forms as f

    kinds = {"t": f.TEXT, "n": f.NUMBER, "x": f.FLOAT, "l": f.LIST, "w": f.WORDS, "e": f.ENV,
             "c": f.CHECK, "p": f.PORTS, "v": f.VOLUMES, "d": f.DURATION}  # fmt: skip
    data, errors = read(kinds, t=" a b ", n=" 4 ", x="0.5", l="a, b\nc,", w="python -c 'x y'",
                        e="A=1\n\n B = two words ", c="on", p="80, 443 8888", v="data:/data",
                        d="90m")  # fmt: skip
    assert errors == {}
    assert data == {"t": "a b", "n": Decimal("4"), "x": 0.5, "l": ["a", "b", "c"],
                    "w": ["python", "-c", "x y"], "e": {"A": "1", "B": "two words"}, "c": True,
                    "p": [80, 443, 8888], "v": [{"pvc": "data", "mount_path": "/data"}],
                    "d": 5400}  # fmt: skip


def test_form_input_leaves_out_empty_fields_but_an_empty_number_is_none_and_a_box_false():
    from portal.web import forms as f

    data, errors = read({"t": f.TEXT, "n": f.NUMBER, "c": f.CHECK, "e": f.ENV, "x": f.FLOAT},
                        t="  ", n="", e="")  # fmt: skip
    assert (data, errors) == ({"n": None, "c": False}, {})


def test_form_input_names_each_field_it_cannot_read():
    from portal.web import forms as f

    kinds = {"x": f.FLOAT, "d": f.DURATION, "w": f.WORDS, "e": f.ENV, "v": f.VOLUMES,
             "t": f.TEXT}  # fmt: skip
    data, errors = read(kinds, x="lots", d="soon", w="'open", e="A=1\nNOEQUALS\n=3",
                        v="data:/data\nnocolon", t="fine")  # fmt: skip
    assert errors == {
        "x": ["must be a number written with the digits 0-9, not 'lots'"],
        "d": ["must be a duration such as 90m, 2h or 1d, not 'soon'"],
        "w": ["cannot split into words: No closing quotation"],
        "e": ["line 'NOEQUALS' is not KEY=VALUE"],
        "v": ["line 'nocolon' is not CLAIM:/mount/path"],
    }
    # what could be read is kept, for the serializer's own messages on the other fields
    assert data == {"e": {"A": "1"}, "v": [{"pvc": "data", "mount_path": "/data"}], "t": "fine"}
