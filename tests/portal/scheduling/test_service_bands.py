"""Service bands in the portal (ALLOT_SERVICE_BANDS, on by default at 1 and 10 GPU-hours, and
ALLOT_BAND_PREEMPTION for L3): the GPU-hours a job has held reach the cycle, a reclaim takes a
team's most-served job first (L2), with L3 a new job preempts its team's longest-served run, and
what the evicted run held is kept on its row for the next bands."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from portal.jobs.models import JobEvent, Status
from portal.settings import envbands

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def week_long(cluster, clock):
    """team-a (quota 8) runs `week` on all 8 GPUs of one node for two hours."""
    cluster.node("dgx1-1", 8)
    cluster.project("team-a", 8)
    cluster.submit("team-a", "week", 8)
    cluster.settle()
    assert cluster.job("team-a", "week").status == Status.RUNNING
    clock.advance(2 * 3600)
    return cluster


def test_l3_a_new_job_preempts_the_run_that_has_held_the_most_gpu_hours(week_long, settings):
    settings.ALLOT_SERVICE_BANDS = (1.0, 10.0)
    settings.ALLOT_BAND_PREEMPTION = True
    week_long.submit("team-a", "quick", 4)
    week_long.cycle()
    week = week_long.job("team-a", "week")
    assert week.status == Status.PENDING
    assert week.held_gpu_s == pytest.approx(8 * 2 * 3600, abs=8 * 5)  # 16 GPU-hours kept (L1)
    evicted = JobEvent.objects.get(job_name="week", kind="evicted")
    assert "held fewer GPU-hours (service band 0 < 2" in evicted.message
    assert "(L3, R10.2)" in evicted.message
    week_long.settle()
    assert week_long.job("team-a", "quick").status == Status.RUNNING


def test_without_service_bands_the_new_job_waits_as_under_kai(week_long, settings):
    settings.ALLOT_SERVICE_BANDS = ()
    week_long.submit("team-a", "quick", 4)
    week_long.settle()
    assert week_long.job("team-a", "week").status == Status.RUNNING
    assert week_long.job("team-a", "quick").status == Status.PENDING
    assert week_long.job("team-a", "week").held_gpu_s == 0


def test_what_earlier_runs_held_counts_after_a_restart(week_long, settings, clock):
    # `week` was evicted after 16 GPU-hours; it starts again when `quick` ends and is in band 2
    # at once (L1), so a newer band-0 job preempts it again rather than waiting.
    settings.ALLOT_SERVICE_BANDS = (1.0, 10.0)
    settings.ALLOT_BAND_PREEMPTION = True
    week_long.submit("team-a", "quick", 8)
    week_long.settle()
    week_long.delete("team-a", "quick")
    week_long.settle()
    assert week_long.job("team-a", "week").status == Status.RUNNING
    clock.advance(60)
    week_long.submit("team-a", "another", 2)
    week_long.cycle()
    assert week_long.job("team-a", "week").status == Status.PENDING
    assert week_long.job("team-a", "week").held_gpu_s == pytest.approx(
        8 * (2 * 3600 + 60), abs=8 * 10
    )


def test_by_default_bands_order_but_a_new_job_waits_instead_of_preempting(week_long):
    """Allot's default (bands at 1 and 10 GPU-hours, no L3): nothing is evicted that KAI
    would not evict, but the GPU-hours held are counted."""
    from django.conf import settings

    assert settings.ALLOT_SERVICE_BANDS == (1.0, 10.0)
    assert settings.ALLOT_BAND_PREEMPTION is False
    week_long.submit("team-a", "quick", 4)
    week_long.settle()
    assert week_long.job("team-a", "week").status == Status.RUNNING
    assert week_long.job("team-a", "quick").status == Status.PENDING


def test_l2_by_default_a_reclaim_takes_the_borrowers_most_served_job(cluster, clock):
    # team-b (quota 0) borrows the node with `veteran` (2 h on 4 GPUs = 8 GPU-h, band 1) and
    # then `fresh` (4 GPUs, just started). team-a asks 4 within its quota: KAI's R8.1 would take
    # the newest (`fresh`); with bands the most-served goes first (L2) and the event says why.
    cluster.node("dgx1-1", 8)
    cluster.project("team-a", 8)
    cluster.project("team-b", 0)
    cluster.submit("team-b", "veteran", 4)
    cluster.settle()
    clock.advance(2 * 3600)
    cluster.submit("team-b", "fresh", 4)
    cluster.settle()
    assert cluster.job("team-b", "fresh").status == Status.RUNNING
    cluster.submit("team-a", "mine", 4)
    cluster.cycle()
    assert cluster.job("team-b", "veteran").status == Status.PENDING
    assert cluster.job("team-b", "fresh").status == Status.RUNNING
    evicted = JobEvent.objects.get(job_name="veteran", kind="evicted")
    assert "(R9.4); veteran has held 8.0 GPU-h (service band 1)" in evicted.message
    assert "(L2)" in evicted.message


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, (1.0, 10.0)),
        ("", ()),
        ("off", ()),
        ("None", ()),
        ("1,10", (1.0, 10.0)),
        (" 0.5 , 2 ,24 ", (0.5, 2.0, 24.0)),
    ],
)
def test_allot_service_bands_reads_gpu_hour_thresholds(monkeypatch, raw, expected):
    if raw is None:
        monkeypatch.delenv("ALLOT_SERVICE_BANDS", raising=False)
    else:
        monkeypatch.setenv("ALLOT_SERVICE_BANDS", raw)
    assert envbands("ALLOT_SERVICE_BANDS", "1,10") == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("1,x", "is not a comma-separated list of numbers"),
        ("10,1", "must be positive GPU-hours in ascending order"),
        ("0,1", "must be positive GPU-hours in ascending order"),
        ("1,1", "must be positive GPU-hours in ascending order"),
        ("1,inf", "must be positive GPU-hours in ascending order"),
    ],
)
def test_a_bad_allot_service_bands_names_the_variable_and_the_fault(monkeypatch, raw, message):
    monkeypatch.setenv("ALLOT_SERVICE_BANDS", raw)
    with pytest.raises(ImproperlyConfigured, match=f"ALLOT_SERVICE_BANDS=.*{message}"):
        envbands("ALLOT_SERVICE_BANDS")


def test_the_job_page_shows_the_gpu_hours_held_and_the_band(week_long, settings, cluster_admin):
    from django.test import Client

    settings.ALLOT_SERVICE_BANDS = (1.0, 10.0)
    settings.ALLOT_BAND_PREEMPTION = True
    week_long.submit("team-a", "quick", 4)
    week_long.cycle()  # week is preempted after 16 GPU-hours (L3)
    browser = Client()
    browser.force_login(cluster_admin)
    page = browser.get("/jobs/team-a/week/").content.decode()
    assert "GPU-hours held" in page and "16.00 GPU-h, service band 2 (bands 0 to 2)" in page
    settings.ALLOT_SERVICE_BANDS = ()
    assert "GPU-hours held" not in browser.get("/jobs/team-a/week/").content.decode()
