"""Issue 34 item 9: a cluster admin gives a user a role in a project from the Users page (only
the project pages could); the API's refusals are shown; nobody else may."""

import pytest
from django.test import Client

from portal.tenancy.models import Membership

pytestmark = pytest.mark.django_db


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_cluster_admin_gives_a_role_from_the_users_page(cluster_admin, outsider, team_a):
    client = browser(cluster_admin)
    page = client.get("/users/").content.decode()
    assert 'action="/users/eve/role/"' in page and "Give role" in page
    answer = client.post("/users/eve/role/", {"project": "team-a", "role": "viewer"}, follow=True)
    assert "eve is now viewer in team-a." in answer.content.decode()
    assert Membership.objects.get(user=outsider, project=team_a).role == "viewer"
    again = client.post("/users/eve/role/", {"project": "team-a", "role": "admin"}, follow=True)
    assert "eve is already a member" in again.content.decode()
    bad = client.post("/users/eve/role/", {"project": "team-a", "role": "boss"}, follow=True)
    assert "role: &#x27;boss&#x27; is not one of admin, researcher, viewer" in bad.content.decode()


def test_a_researcher_cannot_give_roles(member, outsider, team_a):
    answer = browser(member).post("/users/eve/role/", {"project": "team-a", "role": "admin"})
    assert answer.status_code == 403
    assert not Membership.objects.filter(user=outsider, project=team_a).exists()
