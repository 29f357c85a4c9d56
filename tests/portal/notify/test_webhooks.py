"""A project's webhooks and each user's notification settings, written through
`portal.notify.services` by the REST API and the web pages alike."""

from unittest import mock

import pytest
from django.test import Client

from portal.notify import services
from portal.notify.models import Preference, Webhook

pytestmark = pytest.mark.django_db
HOOKS = "/api/v1/projects/team-a/webhooks/"


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def spy(name: str):
    return mock.patch.object(services, name, wraps=getattr(services, name))


def test_the_api_and_the_project_page_add_webhooks_through_create_webhook(api, owner):
    with spy("create_webhook") as create:
        made = api(owner).post(HOOKS, {"url": "https://hooks.example.org/a"}, format="json")
        page = browser(owner).post("/projects/team-a/webhooks/", {"url": "https://x.example/b"},
                                   follow=True).content.decode()  # fmt: skip
    assert made.status_code == 201 and create.call_count == 2
    first, second = Webhook.objects.order_by("id")
    assert made.json()["secret"] == first.secret  # shown once, in the answer that made it
    assert second.secret in page and second.url == "https://x.example/b"
    assert "secret" not in api(owner).get(f"{HOOKS}{first.id}/").json()


def test_the_api_and_the_project_page_remove_webhooks_through_delete_webhook(api, owner, team_a):
    first, second = (Webhook.objects.create(project=team_a, url=f"https://h.example/{n}")
                     for n in (1, 2))  # fmt: skip
    with spy("delete_webhook") as delete:
        assert api(owner).delete(f"{HOOKS}{first.id}/").status_code == 204
        removed = browser(owner).post(f"/projects/team-a/webhooks/{second.id}/delete/")
    assert removed.status_code == 302 and delete.call_count == 2
    assert not Webhook.objects.exists()
    assert browser(owner).post(f"/projects/team-a/webhooks/{second.id}/delete/").status_code == 404


def test_a_webhook_is_paused_and_moved_through_update_webhook(api, owner, team_a):
    webhook = Webhook.objects.create(project=team_a, url="https://h.example/1")
    with spy("update_webhook") as update:
        paused = api(owner).patch(f"{HOOKS}{webhook.id}/", {"active": False}, format="json")
        moved = api(owner).patch(f"{HOOKS}{webhook.id}/", {"url": "https://h.example/2"},
                                 format="json")  # fmt: skip
    assert paused.status_code == 200 and paused.json()["active"] is False
    assert moved.json()["url"] == "https://h.example/2" and update.call_count == 2
    secret = webhook.secret
    webhook.refresh_from_db()
    assert (webhook.url, webhook.active, webhook.secret) == ("https://h.example/2", False, secret)
    assert "secret" not in moved.json()


@pytest.mark.parametrize(("body", "field"), [({"url": "not a url"}, "url"),
                                             ({"url": ""}, "url"),
                                             ({"active": None}, "active")])  # fmt: skip
def test_a_bad_webhook_change_is_a_400_naming_the_field_and_changes_nothing(
    api, owner, team_a, body, field
):
    webhook = Webhook.objects.create(project=team_a, url="https://h.example/1")
    response = api(owner).patch(f"{HOOKS}{webhook.id}/", body, format="json")
    assert response.status_code == 400 and field in response.json()
    webhook.refresh_from_db()
    assert (webhook.url, webhook.active) == ("https://h.example/1", True)


def test_only_the_projects_admins_change_its_webhooks(api, team_a, member, viewer, outsider):
    webhook = Webhook.objects.create(project=team_a, url="https://h.example/1")
    path = f"{HOOKS}{webhook.id}/"
    for user, status in ((member, 403), (viewer, 403), (outsider, 404)):
        assert api(user).patch(path, {"active": False}, format="json").status_code == status
    assert api().patch(path, {"active": False}, format="json").status_code == 401
    assert api(member).put(path, {"url": "https://h.example/2"}, format="json").status_code in (
        403, 405,
    )  # fmt: skip
    webhook.refresh_from_db()
    assert webhook.active and webhook.url == "https://h.example/1"


def test_a_paused_webhook_is_sent_no_events(api, owner, member, team_a, nodes, monkeypatch):
    from portal.jobs.models import Job
    from portal.jobs.services import record_event
    from portal.notify import dispatch
    from portal.notify.models import Delivery

    live, paused = (Webhook.objects.create(project=team_a, url=f"https://h.example/{n}")
                    for n in (1, 2))  # fmt: skip
    api(owner).patch(f"{HOOKS}{paused.id}/", {"active": False}, format="json")
    body = {"project": "team-a", "name": "j", "gpus": 1}
    assert api(member).post("/api/v1/jobs/", body, format="json").status_code == 201
    event = record_event(Job.objects.get(name="j"), "running", "running on dgx1-1")
    monkeypatch.setattr(dispatch, "deliver", lambda delivery_id: None)  # no network
    dispatch.notify_events([event.id])
    assert list(Delivery.objects.values_list("webhook_id", flat=True)) == [live.id]


def test_the_api_and_my_page_save_notification_settings_through_set_preference(api, member):
    with spy("set_preference") as save:
        assert api(member).get("/api/v1/me/notifications/").json() == {"email": True,
                                                                      "browser": True}  # fmt: skip
        assert not Preference.objects.exists()  # reading writes nothing
        patched = api(member).patch("/api/v1/me/notifications/", {"email": False}, format="json")
        assert patched.json() == {"email": False, "browser": True}
        browser(member).post("/me/", {"action": "notifications", "email": "on"})
    assert save.call_count == 2
    preference = Preference.objects.get(user=member)
    assert (preference.email, preference.browser) == (True, False)
