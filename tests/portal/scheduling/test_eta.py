"""Predicted run times and pending jobs' ETAs in the portal (Step 7): learned from succeeded jobs,
simulated forward with the scheduler's own cycles, shown by the API, the job page, the overview
and `allot get`."""

from __future__ import annotations

import html
import math
from datetime import datetime, timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from portal.dashboards.overview import build_full_overview
from portal.jobs.models import Job, Status
from portal.scheduling import eta, snapshot

pytestmark = pytest.mark.django_db(transaction=True)


def finished(
    cluster, project: str, name: str, seconds: float, gpus: float = 4, ago: float = 86400
) -> None:
    """A succeeded job that ran `seconds` and ended `ago` seconds before now (history for the
    predictor; a day ago by default, so it is in no burst with jobs submitted now)."""
    job = cluster.submit(project, name, gpus)
    end = job.submitted_at - timedelta(seconds=ago)
    start = end - timedelta(seconds=seconds)
    Job.objects.filter(pk=job.pk).update(
        status=Status.SUCCEEDED, submitted_at=start, started_at=start, finished_at=end
    )


@pytest.fixture
def busy(cluster, clock):
    """One 8-GPU node held by team-a's `long` (runs of team-a's 4-GPU jobs took 1 h before),
    team-a's `next` waiting behind it."""
    cluster.node("dgx1-1", 8)
    cluster.project("team-a", 8)
    for i, seconds in enumerate((3000, 3600, 4200)):
        finished(cluster, "team-a", f"old-{i}", seconds)
    cluster.submit("team-a", "long-1", 4)
    cluster.submit("team-a", "long-2", 4)
    cluster.settle()
    cluster.submit("team-a", "next", 4)
    cluster.settle()
    return cluster


def test_a_pending_jobs_eta_is_when_the_running_jobs_predicted_ends_free_its_gpus(busy, clock):
    written = eta.refresh(now=clock.now)
    assert written == 3  # two running, one pending
    waiting = busy.job("team-a", "next")
    assert waiting.status == Status.PENDING
    assert (waiting.expected_s, waiting.expected_basis) == (3600, "project+gpus")
    started = busy.job("team-a", "long-1").started_at
    assert waiting.eta == started + timedelta(seconds=3600)  # the median of 3000/3600/4200 s
    assert busy.job("team-a", "long-1").eta is None  # running jobs have no ETA


def test_the_first_finished_job_of_a_burst_predicts_the_jobs_submitted_with_it(
    cluster, clock, cluster_admin
):
    """A sweep's jobs (same user, project, image and GPUs, submitted a few seconds apart) run
    alike: once one of them finished, it predicts the rest, ahead of the team's history."""
    cluster.node("dgx1-1", 8)
    cluster.project("team-a", 8)
    for i in range(3):
        finished(cluster, "team-a", f"old-{i}", 3600)
    for i in range(3):
        cluster.submit("team-a", f"sweep-{i}", 4)
    cluster.submit("team-a", "other", 4, image="other:1")  # another image: not in the burst
    sweep = Job.objects.get(project__name="team-a", name="sweep-0")
    Job.objects.filter(pk=sweep.pk).update(
        status=Status.SUCCEEDED, started_at=sweep.submitted_at,
        finished_at=sweep.submitted_at + timedelta(seconds=600),
    )  # fmt: skip
    eta.refresh(now=clock.now)
    for name in ("sweep-1", "sweep-2"):
        job = cluster.job("team-a", name)
        assert (job.expected_s, job.expected_basis) == (600, "burst")
    other = cluster.job("team-a", "other")
    assert (other.expected_s, other.expected_basis) == (3600, "project+gpus")
    from django.test import Client

    browser = Client()
    browser.force_login(cluster_admin)
    page = browser.get("/jobs/team-a/sweep-1/").content.decode()
    assert "10 min <span" in page and "(from the jobs submitted with it that finished)" in page


def test_a_job_submitted_after_the_burst_gap_starts_a_burst_of_its_own(cluster, clock):
    cluster.node("dgx1-1", 8)
    cluster.project("team-a", 8)
    for i in range(3):
        finished(cluster, "team-a", f"old-{i}", 3600)
    first = cluster.submit("team-a", "first", 4)
    later = cluster.submit("team-a", "later", 4)
    Job.objects.filter(pk=later.pk).update(submitted_at=first.submitted_at + timedelta(seconds=61))
    Job.objects.filter(pk=first.pk).update(
        status=Status.SUCCEEDED, started_at=first.submitted_at,
        finished_at=first.submitted_at + timedelta(seconds=600),
    )  # fmt: skip
    eta.refresh(now=clock.now)
    job = cluster.job("team-a", "later")
    assert (job.expected_s, job.expected_basis) == (3600, "project+gpus")


def test_running_jobs_count_as_long_as_they_have_run_and_carry_their_predicted_end(
    busy, clock, cluster_admin
):
    from django.test import Client

    started = busy.job("team-a", "long-1").started_at
    eta.refresh(now=clock.now)
    assert busy.job("team-a", "long-1").expected_end == (started + timedelta(hours=1)).timestamp()
    # 4,000 s in, both 4-GPU jobs have outlived 3,000 and 3,600 s. Kaplan-Meier with them as
    # "longer than 4,000 s": 4/5 run past 3,000, 3/5 past 3,600, none past 4,200 - so `next`
    # is predicted 4,200 s (not the 3,600 s median of what finished), the running jobs end at
    # 4,200 s (3/5 of them got to 4,000; the first duration by which half of those ended), and
    # `next` starts then - not "any moment", as a plain start + prediction said.
    clock.advance(4000)
    eta.refresh(now=clock.now)
    end = (started + timedelta(seconds=4200)).timestamp()
    assert busy.job("team-a", "long-1").expected_end == end
    assert busy.job("team-a", "next").expected_s == 4200
    assert busy.job("team-a", "next").eta == started + timedelta(seconds=4200)
    # What backfill's reservations count on (B1):
    ends = {j.name: j.expected_end for j in snapshot.load().jobs}
    assert ends == {"long-1": end, "long-2": end, "next": None}
    browser = Client()
    browser.force_login(cluster_admin)
    page = browser.get("/jobs/team-a/long-1/").content.decode()
    assert "Predicted end" in page and "from finished jobs like it and how long it has run" in page
    # Past every finished run: no predictable end, and so no exact ETA for `next`, only the
    # lower bound "if they ended now" (issue 24: never "unknown" for that).
    clock.advance(1000)
    eta.refresh(now=clock.now)
    assert busy.job("team-a", "long-1").expected_end == math.inf
    waiting = busy.job("team-a", "next")
    assert (waiting.eta_kind, waiting.eta) == ("not_before", clock.now)
    page = browser.get("/jobs/team-a/long-1/").content.decode()
    assert "unknown: it has run longer than the finished jobs like it" in page


def test_the_eta_is_unknown_when_nothing_predicts_the_running_jobs_end(cluster, clock):
    cluster.node("dgx1-1", 8)
    cluster.project("team-a", 8)
    cluster.submit("team-a", "whole", 8)
    cluster.settle()
    cluster.submit("team-a", "next", 8)
    cluster.settle()
    eta.refresh(now=clock.now)
    # no history at all: the predictor's default (1 h) still gives an estimate
    assert cluster.job("team-a", "next").expected_basis == "default"
    assert cluster.job("team-a", "next").eta is not None


def test_the_api_overview_and_job_page_show_the_eta(busy, clock, api, cluster_admin):
    eta.refresh(now=clock.now)
    body = api(cluster_admin).get("/api/v1/jobs/team-a/next/").json()
    assert body["eta"] and body["expected_s"] == 3600 and body["expected_basis"] == "project+gpus"
    pending = build_full_overview()["pending"]
    assert [row["eta"] for row in pending] == [busy.job("team-a", "next").eta.isoformat()]
    from django.test import Client

    browser = Client()
    browser.force_login(cluster_admin)
    page = browser.get("/jobs/team-a/next/").content.decode()
    assert "Expected start" in page and "Predicted run time" in page and "1 h 0 min" in page


def test_a_submitters_estimate_caps_the_prediction_and_shows_on_the_job_page(
    busy, clock, api, cluster_admin
):
    """team-a's 4-GPU jobs took about an hour; `quick` is estimated at 10 min by its submitter
    (the prediction drops to it), `slow` at 10 h (history is the lower, so history stands)."""
    client = api(cluster_admin)
    for name, estimate in (("quick", 600), ("slow", 36000)):
        body = {"project": "team-a", "name": name, "gpus": 4, "estimate_s": estimate}
        created = client.post("/api/v1/jobs/", body, format="json")
        assert created.status_code == 201, created.content
        assert created.json()["estimate_s"] == estimate
    eta.refresh(now=clock.now)
    quick, slow = busy.job("team-a", "quick"), busy.job("team-a", "slow")
    assert (quick.expected_s, quick.expected_basis) == (600, "estimate")
    assert (slow.expected_s, slow.expected_basis) == (3600, "project+gpus")
    from django.test import Client

    browser = Client()
    browser.force_login(cluster_admin)
    page = browser.get("/jobs/team-a/quick/").content.decode()
    assert "10 min <span" in page and "(your estimate)" in page and "Your estimate" in page


@pytest.mark.parametrize(
    ("estimate", "reason"),
    [
        (0, "greater than or equal to 1"),
        (-5, "greater than or equal to 1"),
        ("soon", "must be a whole number, not a string"),  # strict JSON types (issue 22)
        (366 * 24 * 3600, "less than or equal to 31536000"),
    ],
)
def test_a_bad_estimate_is_a_400_naming_the_field(cluster, api, cluster_admin, estimate, reason):
    cluster.node("dgx1-1", 8)
    cluster.project("team-a", 8)
    body = {"project": "team-a", "name": "j", "gpus": 1, "estimate_s": estimate}
    response = api(cluster_admin).post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 400
    assert reason in " ".join(response.json()["estimate_s"])
    assert not Job.objects.filter(name="j").exists()


def test_after_a_cycle_the_etas_are_refreshed_in_the_background(busy, settings):
    settings.ALLOT_ETA_INTERVAL_S = 1
    cache.delete(eta.PACING_KEY)
    busy.cycle()  # starts the refresh thread; the cycle does not wait for it
    eta.thread.join(30)
    assert busy.job("team-a", "next").eta is not None
    assert eta.refresh_if_due() is False  # not again within the interval


def test_with_allot_backfill_the_cycle_holds_a_long_job_for_a_waiting_gang(cluster, settings):
    """ALLOT_BACKFILL: predictions on the rows reach the cycle (B1-B3), the mark is stored."""
    settings.ALLOT_BACKFILL = True
    cluster.node("dgx1-1", 8)
    cluster.node("dgx1-2", 8)
    cluster.project("team-a", 16)
    cluster.submit("team-a", "half", 4)
    cluster.settle()
    Job.objects.filter(name="half").update(expected_s=600)
    cluster.submit("team-a", "gang", 8, pods=2)  # needs both nodes: waits for `half`
    cluster.submit("team-a", "long", 4)
    cluster.submit("team-a", "short", 4)
    Job.objects.filter(name="long").update(expected_s=36000)
    Job.objects.filter(name="short").update(expected_s=60)
    cluster.cycle()
    assert "(B3)" in cluster.job("team-a", "long").pending_reason
    assert "gang" in cluster.job("team-a", "long").pending_reason
    short = cluster.job("team-a", "short")
    assert short.status == Status.CONTAINER_CREATING and short.backfilled
    assert cluster.job("team-a", "gang").status == Status.PENDING


def test_when_running_jobs_outlive_their_predictions_the_etas_are_lower_bounds(
    busy, clock, api, cluster_admin
):
    """Issue 24 item 2: 18 jobs showed "unknown" for a minute because the running jobs had
    outlived their predictions. Now each says the earliest it could start: `next` if the
    outlived jobs ended now, `after` one predicted run of `next` later; never in the past."""
    busy.submit("team-a", "after", 8)
    busy.settle()
    clock.advance(5000)  # past 4,200 s, the longest finished run: no predictable end
    eta.refresh(now=clock.now)
    waiting, after = busy.job("team-a", "next"), busy.job("team-a", "after")
    assert busy.job("team-a", "long-1").outlived
    assert (waiting.eta_kind, waiting.eta) == ("not_before", clock.now)
    assert after.eta_kind == "not_before"
    assert after.eta == clock.now + timedelta(seconds=waiting.expected_s)
    body = api(cluster_admin).get("/api/v1/jobs/team-a/after/").json()
    assert body["eta_kind"] == "not_before"
    assert body["expected_start"].startswith("not before ")
    assert "it waits on running jobs that have run longer than predicted" in body["expected_start"]
    assert "unknown" not in body["expected_start"]
    from django.test import Client

    browser = Client()
    browser.force_login(cluster_admin)
    page = browser.get("/jobs/team-a/next/").content.decode()
    # (the test's clock runs ahead of the wall clock the page reads, so it is a time here)
    assert "it waits on running jobs that have run longer than predicted" in page


def test_an_eta_is_never_shown_in_the_past(busy, clock, api, cluster_admin):
    """An ETA written by the last refresh goes stale until the next one: at 08:08:50 a job
    said "08:07 (0 minutes from now)". A start that is due says so, and the API's `eta` is
    never earlier than the moment it answers."""
    eta.refresh(now=clock.now)
    Job.objects.filter(name="next").update(eta=timezone.now() - timedelta(minutes=2))
    body = api(cluster_admin).get("/api/v1/jobs/team-a/next/").json()
    assert body["eta_kind"] == "at"
    assert datetime.fromisoformat(body["eta"].replace("Z", "+00:00")) >= timezone.now() - timedelta(
        seconds=5
    )
    assert body["expected_start"] == "any moment now: the next cycles should start it"
    overview = build_full_overview()["pending"]
    assert overview[0]["expected_start"] == body["expected_start"]


def test_a_job_that_can_never_start_as_submitted_says_so(cluster, clock, api, cluster_admin):
    """Interactive, 3 GPUs, quota 2: it used to "wait on jobs whose run time cannot be
    predicted yet"; it can never start as submitted (R3.2), and the ETA says that."""
    cluster.node("dgx1-1", 8)
    cluster.project("team-b", 2)
    cluster.submit("team-b", "notebook", 3, type="interactive")
    cluster.settle()
    eta.refresh(now=clock.now)
    job = cluster.job("team-b", "notebook")
    assert (job.status, job.eta_kind, job.eta) == (Status.PENDING, "never", None)
    text = (
        "cannot start: interactive jobs may not exceed team-b's quota (2 GPUs); this one asks "
        "for 3 GPUs (R3.2)"
    )
    body = api(cluster_admin).get("/api/v1/jobs/team-b/notebook/").json()
    assert (body["expected_start"], body["eta"], body["eta_kind"]) == (text, None, "never")
    from django.test import Client

    browser = Client()
    browser.force_login(cluster_admin)
    assert text in html.unescape(browser.get("/jobs/team-b/notebook/").content.decode())


def test_a_default_prediction_says_it_is_a_guess(cluster, clock, cluster_admin):
    """With no finished job it said "1 h 0 min (from finished jobs: default)"."""
    cluster.node("dgx1-1", 8)
    cluster.project("team-a", 8)
    cluster.submit("team-a", "whole", 8)
    cluster.settle()
    cluster.submit("team-a", "next", 8)
    cluster.settle()
    eta.refresh(now=clock.now)
    from django.test import Client

    browser = Client()
    browser.force_login(cluster_admin)
    page = browser.get("/jobs/team-a/next/").content.decode()
    assert "(a default guess: no finished job like it yet)" in page
    assert "from finished jobs: default" not in page
