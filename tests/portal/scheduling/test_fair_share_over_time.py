"""Fair share over time in the portal (R2.9, E10; issue 23): the runs recorded yesterday reach
the cycle as `Snapshot.usage` when ALLOT_FAIRSHARE_HALF_LIFE is set, through the real cycle on
PostgreSQL (the runs at fixed times before the cycle's clock), and the project page and API say
what it did."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client

from portal.jobs.models import Job, JobRun, Status
from portal.scheduling import fairshare, past_usage
from portal.scheduling.snapshot import load_nodes
from portal.tenancy.models import Membership, Project

pytestmark = pytest.mark.django_db(transaction=True)

HOUR = 3600.0
DAY = 86400.0


@pytest.fixture
def fairshare_on(settings):
    settings.ALLOT_FAIRSHARE_HALF_LIFE = 12 * HOUR
    settings.ALLOT_FAIRSHARE_WINDOW = 7 * DAY
    settings.ALLOT_FAIRSHARE_K = 1.0
    cache.delete(past_usage.cache_key(past_usage.params()))
    yield settings
    cache.delete(past_usage.cache_key(past_usage.params()))


def _yesterday(cluster, clock, project="team-a", gpus=8):
    """`project` held `gpus` GPUs from 30 to 6 hours before the cycle's clock: one finished job
    with one run, at fixed times."""
    owner = Project.objects.get(name=project)
    start, end = clock.now - timedelta(hours=30), clock.now - timedelta(hours=6)
    job = Job.objects.create(project=owner, name="yesterday", gpus=gpus, status=Status.SUCCEEDED,
                             started_at=start, finished_at=end)  # fmt: skip
    JobRun.objects.create(job=job, number=1, started_at=start, ended_at=end, gpus=gpus,
                          end="completed")  # fmt: skip


def _contest(cluster, clock):
    """Two teams with the same quota (1 GPU) and weight on one 8-GPU node, team-a heavy
    yesterday, team-b idle; today each asks for the whole node."""
    cluster.node("dgx1-1", 8)
    cluster.project("team-a", 1)
    cluster.project("team-b", 1)
    _yesterday(cluster, clock)
    for i in range(8):
        cluster.submit("team-a", f"a-{i}")
        cluster.submit("team-b", f"b-{i}")
    cluster.settle()
    return {p.name: p.fair_share for p in Project.objects.all()}


def test_r2_9_a_team_that_used_the_cluster_yesterday_gets_a_smaller_share_today(
    cluster, clock, fairshare_on
):
    shares = _contest(cluster, clock)
    # team-a held 8 of 8 GPUs from 30 to 6 hours ago: with a 12-hour half-life that is
    # 0.5 ** 0.5 - 0.5 ** 2.5 = 0.53 of what the cluster could have given in the window.
    usage = past_usage.usage_for(load_nodes(), (), clock.now)  # the figure the cycle used
    assert usage["team-a"] == pytest.approx(0.5**0.5 - 0.5**2.5, rel=1e-3)
    # Phase 1: 1 and 1; 6 over quota. w' = n + k(n - u): team-a 0.5 + (0.5 - 0.53) = 0.47,
    # team-b 1.0 -> offers 1.9 and 4.1 -> 1 and 4, leftovers .9 and .1 -> team-a: 3 and 5.
    assert shares == {"team-a": 3.0, "team-b": 5.0}
    assert cluster.allocated() == {"team-a": 3.0, "team-b": 5.0}


def test_r2_9_with_decay_off_the_same_teams_get_equal_shares(cluster, clock, settings):
    settings.ALLOT_FAIRSHARE_HALF_LIFE = 0.0  # the default
    shares = _contest(cluster, clock)
    assert shares == {"team-a": 4.0, "team-b": 4.0}
    assert cluster.allocated() == {"team-a": 4.0, "team-b": 4.0}


def test_r2_9_a_deleted_jobs_gpu_hours_still_count(cluster, clock, fairshare_on):
    # Runs outlive their jobs (accounting): deleting yesterday's job does not wipe its usage.
    cluster.node("dgx1-1", 8)
    cluster.project("team-a", 1)
    _yesterday(cluster, clock)
    before = past_usage.decayed_gpu_s(clock.now, past_usage.params())
    Job.objects.get(name="yesterday").delete()
    assert past_usage.decayed_gpu_s(clock.now, past_usage.params()) == before
    assert before["team-a"] > 0


def test_usage_outside_the_window_counts_for_nothing(cluster, clock, fairshare_on):
    fairshare_on.ALLOT_FAIRSHARE_WINDOW = 4 * HOUR  # yesterday's run ended 6 hours ago
    cache.delete(past_usage.cache_key(past_usage.params()))
    shares = _contest(cluster, clock)
    assert shares == {"team-a": 4.0, "team-b": 4.0}


def test_the_sum_of_runs_is_read_once_a_minute_before_the_lock(
    cluster, clock, fairshare_on, django_assert_num_queries
):
    cluster.node("dgx1-1", 8)
    cluster.project("team-a", 1)
    _yesterday(cluster, clock)
    nodes = load_nodes()
    with django_assert_num_queries(1):
        past_usage.warm(clock.now)  # the cycle sums the runs before it takes the lock
    with django_assert_num_queries(0):
        first = past_usage.usage_for(nodes, (), clock.now)  # the snapshot, under the lock
    with django_assert_num_queries(0):
        assert past_usage.usage_for(nodes, (), clock.now + timedelta(seconds=30)) == first
    with django_assert_num_queries(1):
        later = past_usage.usage_for(nodes, (), clock.now + timedelta(seconds=61))
    assert later["team-a"] < first["team-a"]  # a minute more of decay


def test_the_project_says_what_its_usage_did_to_its_share(cluster, clock, fairshare_on):
    _contest(cluster, clock)
    figures = fairshare.explain("team-a", clock.now)
    assert figures.enabled
    assert figures.gpu_hours == pytest.approx(8 * 24)
    assert figures.decayed_gpu_hours == pytest.approx(
        8 * 12 / 0.6931471805599453 * (0.5**0.5 - 0.5**2.5), rel=1e-6
    )
    assert (figures.fair_share, figures.fair_share_without_usage) == (3.0, 4.0)
    assert "team-a used 192.0 GPU-hours" in figures.summary
    assert "its fair share is 3 GPUs instead of 4 GPUs" in figures.summary
    other = fairshare.explain("team-b", clock.now)
    assert (other.fair_share, other.fair_share_without_usage, other.usage) == (5.0, 4.0, 0.0)
    assert "Other teams used more" in other.summary


def _member_of(project: str):
    user = get_user_model().objects.create_user(username="lead", password="x-test-password-1")
    Membership.objects.create(user=user, project=Project.objects.get(name=project), role="viewer")
    return user


def test_the_project_page_shows_the_usage_that_moved_its_share(cluster, clock, fairshare_on):
    _contest(cluster, clock)
    client = Client()
    client.force_login(_member_of("team-a"))
    page = client.get("/projects/team-a/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="fair-share-over-time"' in html
    assert "team-a used 192.0 GPU-hours" in html
    assert "its fair share is 3 GPUs instead of 4 GPUs" in html
    assert '<dd id="fairshare-share">3 GPUs; 4 GPUs if past usage did not count</dd>' in html
    assert '<dd id="fairshare-usage">53%</dd>' in html


def test_the_project_api_gives_the_same_figures(cluster, clock, fairshare_on, api):
    _contest(cluster, clock)
    body = api(_member_of("team-a")).get("/api/v1/projects/team-a/").json()
    over_time = body["fair_share_over_time"]
    assert over_time["enabled"] is True
    assert (over_time["half_life_hours"], over_time["window_days"]) == (12.0, 7.0)
    assert over_time["gpu_hours"] == pytest.approx(192.0, abs=0.1)
    assert over_time["usage"] == pytest.approx(0.53, abs=0.01)
    assert (over_time["fair_share"], over_time["fair_share_without_usage"]) == (3.0, 4.0)
    assert over_time["summary"].startswith("In the last 7 days, team-a used")


def test_with_decay_off_the_page_says_past_usage_does_not_count(cluster, clock, api):
    _contest(cluster, clock)
    user = _member_of("team-a")
    client = Client()
    client.force_login(user)
    html = client.get("/projects/team-a/").content.decode()
    assert "Fair share over time is off: past usage does not change fair shares" in html
    over_time = api(user).get("/api/v1/projects/team-a/").json()["fair_share_over_time"]
    assert over_time["enabled"] is False
    assert over_time["fair_share"] == over_time["fair_share_without_usage"] == 4.0
