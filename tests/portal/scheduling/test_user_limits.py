"""Per-user limits set in the portal reach the real cycle through the snapshot (issue 36, R21.1-
R21.3 in docs/user-fairness.md): a user's jobs over their limit wait naming it while a teammate
starts; an override beats the project default."""

from __future__ import annotations

from decimal import Decimal

import pytest

from portal.jobs.models import Job, Status
from portal.jobs.services import submit_job
from portal.tenancy.models import Membership, Project, UserLimit

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def team(cluster, django_user_model):
    """team-a (quota 8) on one 8-GPU node, with researchers ann and ben."""
    cluster.node("n1", 8)
    project = cluster.project("team-a", 8)
    people = {}
    for name in ("ann", "ben"):
        people[name] = django_user_model.objects.create_user(name)
        Membership.objects.create(user=people[name], project=project, role="researcher")
    return project, people


def submit(project: Project, user, name: str, gpus: float = 1, **fields) -> Job:
    return submit_job(user, project, name=name, gpus=Decimal(str(gpus)), **fields)


def statuses(user) -> dict[str, int]:
    counts: dict[str, int] = {}
    for status in Job.objects.filter(user=user).values_list("status", flat=True):
        counts[status] = counts.get(status, 0) + 1
    return counts


def test_r21_1_a_user_gpu_limit_keeps_ten_jobs_to_two_running_while_a_teammate_starts(
    cluster, team
):
    project, people = team
    UserLimit.objects.create(project=project, max_gpus=2)
    for number in range(10):
        submit(project, people["ann"], f"ann-{number}")
    cluster.settle()
    assert statuses(people["ann"]) == {Status.RUNNING: 2, Status.PENDING: 8}
    waiting = Job.objects.filter(user=people["ann"], status=Status.PENDING).first()
    assert "ann's per-user GPU limit of 2 GPUs in team-a" in waiting.pending_reason
    assert "(R21.1)" in waiting.pending_reason
    submit(project, people["ben"], "ben-0")
    cluster.settle()
    assert cluster.job("team-a", "ben-0").status == Status.RUNNING
    assert statuses(people["ann"]) == {Status.RUNNING: 2, Status.PENDING: 8}


def test_r21_2_a_users_override_beats_the_project_default(cluster, team):
    project, people = team
    UserLimit.objects.create(project=project, max_running=1)
    UserLimit.objects.create(project=project, user=people["ann"], max_running=3)
    for number in range(4):
        submit(project, people["ann"], f"ann-{number}")
        submit(project, people["ben"], f"ben-{number}")
    cluster.settle()
    assert statuses(people["ann"]) == {Status.RUNNING: 3, Status.PENDING: 1}
    assert statuses(people["ben"]) == {Status.RUNNING: 1, Status.PENDING: 3}
    waiting = Job.objects.filter(user=people["ben"], status=Status.PENDING).first()
    assert "ben's running-jobs limit of 1 in team-a: 1 running (R21.2)" in waiting.pending_reason


def test_r21_3_interactive_sessions_are_capped_apart_from_training(cluster, team):
    project, people = team
    UserLimit.objects.create(project=project, max_interactive=1)
    submit(project, people["ann"], "nb-1", type="interactive")
    submit(project, people["ann"], "nb-2", type="interactive")
    submit(project, people["ann"], "train-1")
    cluster.settle()
    assert cluster.job("team-a", "nb-1").status == Status.RUNNING
    assert cluster.job("team-a", "train-1").status == Status.RUNNING
    second = cluster.job("team-a", "nb-2")
    assert second.status == Status.PENDING
    assert "interactive-sessions limit of 1 in team-a" in second.pending_reason


def test_a_limit_deleted_in_the_portal_lets_the_waiting_jobs_start(cluster, team):
    project, people = team
    limit = UserLimit.objects.create(project=project, max_gpus=1)
    for number in range(3):
        submit(project, people["ann"], f"ann-{number}")
    cluster.settle()
    assert statuses(people["ann"]) == {Status.RUNNING: 1, Status.PENDING: 2}
    limit.delete()
    cluster.settle()
    assert statuses(people["ann"]) == {Status.RUNNING: 3}
