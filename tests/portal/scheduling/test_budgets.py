"""Budgets through the portal's cycle (issue 36, R20 in docs/budgets.md): usage counted from the
runs agrees exactly with the accounting; a soft budget notifies at 80 % and 100 %; a spent hard
budget holds the next job with its reason, or lets it run as preemptible work; a term window
stops counting (and holding) at its end date."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.core import mail

from portal.budgets.models import Budget, BudgetNotice
from portal.budgets.usage import measure
from portal.dashboards import accounting
from portal.jobs.models import Job, JobEvent, JobRun, JobType, Status
from portal.notify import dispatch
from portal.tenancy.models import Department, Project
from tests.portal.scheduling.conftest import Clock

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def clock() -> Clock:
    # mid-month, mid-term: the windows below hold every step of a test
    return Clock(datetime(2026, 11, 10, 9, 0, tzinfo=UTC))


def term_budget(project: Project, **fields) -> Budget:
    defaults = {"name": "term", "project": project, "gpu_hours": Decimal(10), "window": "term",
                "term_start": datetime(2026, 9, 1).date(),
                "term_end": datetime(2026, 11, 30).date()}  # fmt: skip
    return Budget.objects.create(**{**defaults, **fields})


def run_for(cluster, clock, project: str, name: str, gpus: int, hours: float) -> None:
    """Start a job and let it hold its GPUs for `hours` of the test's clock."""
    cluster.submit(project, name, gpus)
    cluster.cycle()
    cluster.cycle()
    assert cluster.job(project, name).status == Status.RUNNING
    clock.advance(hours * 3600)


def test_r20_1_a_budget_counts_exactly_what_the_accounting_reports(django_user_model):
    team = Project.objects.create(name="team-a", quota=4)
    ada = django_user_model.objects.create_user("ada")
    t = datetime(2026, 11, 3, 7, 13, 2, 123457, tzinfo=UTC)
    for number, (gpus, start, length) in enumerate(
        [(0.5, t, 3.3), (3, t + timedelta(hours=1, seconds=7), 26.01), (1.25, t, 0.0001)], 1
    ):
        job = Job.objects.create(project=team, name=f"j{number}", gpus=gpus, user=ada,
                                 type=JobType.TRAIN, status=Status.SUCCEEDED)  # fmt: skip
        end = start + timedelta(hours=length)
        JobRun.objects.create(job=job, number=1, started_at=start, ended_at=end, gpus=gpus,
                              user=ada, cpu_millis=1500)  # fmt: skip
    budget = Budget.objects.create(name="m", project=team, gpu_hours=100, core_hours=50)
    now = datetime(2026, 11, 20, tzinfo=UTC)
    state = measure(budget, now)
    params = {"group_by": "project", "period": "month", "since": "2026-11-01",
              "until": "2026-11-30"}  # fmt: skip
    query, errors = accounting.parse(params, ["team-a"], now)
    assert errors == {}
    report = accounting.build(query, JobRun.objects.all(), Project.objects.all(), now).as_dict()
    (total,) = report["totals"]
    assert state.used_gpu_hours == total["allocated_gpu_hours"]  # bit for bit, not approx
    assert state.used_core_hours == total["allocated_core_hours"]
    assert state.used_gpu_hours == pytest.approx(0.5 * 3.3 + 3 * 26.01 + 1.25 * 0.0001)


def test_r20_5_a_soft_budget_notifies_the_project_admins_at_80_and_100_percent(
    cluster, clock, settings, owner
):
    settings.ALLOT_NOTIFICATIONS = True
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    owner.email = "alice@example.org"
    owner.save()
    cluster.node("n1", 8)
    team = Project.objects.get(name="team-a")
    term_budget(team)  # soft, 10 GPU-hours, thresholds 80 and 100
    run_for(cluster, clock, "team-a", "big", 8, 0.9)  # 7.2 GPU-hours: 72 %
    cluster.cycle()
    assert list(BudgetNotice.objects.values_list("threshold", flat=True)) == []
    clock.advance(0.1 * 3600)  # 8 GPU-hours: 80 %
    cluster.cycle()
    cluster.cycle()  # announced once per window
    clock.advance(0.25 * 3600)  # 10 GPU-hours: 100 %
    cluster.cycle()
    dispatch.wait_idle()
    events = JobEvent.objects.filter(kind="budget").order_by("id")
    assert [e.message.split(" (")[0] for e in events] == [
        "project team-a's budget 'term' reached 80 %",
        "project team-a's budget 'term' reached 100 %",
    ]
    assert events[0].message.endswith("per term 2026-09-01 to 2026-11-30) (R20.5)")
    assert [m.to for m in mail.outbox] == [["alice@example.org"]] * 2
    assert mail.outbox[0].subject == "[Allot] team-a budget threshold reached"
    assert cluster.job("team-a", "big").status == Status.RUNNING  # soft: nothing enforced


def test_r20_2_a_spent_hard_budget_holds_the_next_job_with_its_reason(cluster, clock):
    cluster.node("n1", 8)
    team = cluster.project("team-a", 8)
    term_budget(team, kind="hard", over="wait", gpu_hours=Decimal(4))
    run_for(cluster, clock, "team-a", "first", 4, 1)  # 4 GPU-hours: spent
    cluster.submit("team-a", "next", 1)
    cluster.cycle()
    job = cluster.job("team-a", "next")
    assert job.status == Status.PENDING
    assert job.pending_reason == (
        "project team-a's hard budget 'term' of 4.00 GPU-hours per term 2026-09-01 to "
        "2026-11-30 is spent (4.00 GPU-hours, 0.00 core-hours used) (R20.2)"
    )
    assert cluster.job("team-a", "first").status == Status.RUNNING  # running work carries on


def test_r20_3_a_spent_hard_budget_lets_the_next_job_run_preemptible_and_r20_4_takes_it_back(
    cluster, clock
):
    cluster.node("n1", 8)
    team = cluster.project("team-a", 8)
    cluster.project("team-b", 0, over_quota_weight=Decimal(1))
    term_budget(team, kind="hard", over="preemptible", gpu_hours=Decimal(4))
    run_for(cluster, clock, "team-a", "first", 4, 1)
    cluster.delete("team-a", "first")
    cluster.submit("team-a", "next", 8)
    cluster.settle()
    assert cluster.job("team-a", "next").status == Status.RUNNING  # on idle GPUs
    cluster.submit("team-b", "b", 2)  # team-b is over its quota of 0: no reclaim right, R9.2
    cluster.settle()
    assert cluster.job("team-b", "b").status == Status.RUNNING
    evicted = JobEvent.objects.filter(job_name="next", kind="evicted").last()
    assert "past its budget" in evicted.message and evicted.message.endswith("(R20.4)")


def test_r20_1_a_term_budget_stops_holding_at_its_end_date(cluster, clock):
    cluster.node("n1", 8)
    team = cluster.project("team-a", 8)
    term_budget(team, kind="hard", over="wait", gpu_hours=Decimal(4),
                term_end=datetime(2026, 11, 10).date())  # fmt: skip
    run_for(cluster, clock, "team-a", "first", 4, 1)
    cluster.submit("team-a", "next", 1)
    cluster.cycle()
    assert cluster.job("team-a", "next").status == Status.PENDING
    clock.now = datetime(2026, 11, 11, 0, 0, 1, tzinfo=UTC)  # the term ended at midnight
    cluster.settle()
    assert cluster.job("team-a", "next").status == Status.RUNNING
    state = measure(Budget.objects.get(), clock.now)
    assert (state.start, state.used_gpu_hours, state.spent) == (None, 0.0, False)


def test_r20_1_a_department_budget_counts_all_its_projects(cluster, clock):
    physics = Department.objects.create(name="physics", quota=8)
    cluster.node("n1", 8)
    cluster.project("team-a", 4, department=physics)
    cluster.project("team-c", 4, department=physics)
    budget = Budget.objects.create(name="d", department=physics, gpu_hours=100)
    run_for(cluster, clock, "team-a", "a", 2, 0)
    run_for(cluster, clock, "team-c", "c", 1, 2)
    assert measure(budget, clock.now).used_gpu_hours == pytest.approx(6.0)
