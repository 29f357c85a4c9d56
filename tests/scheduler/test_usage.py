"""Time-based fair share's usage (R2.9, E10; `scheduler.usage`): KAI's window, half-life decay and
normalisation to the cluster's capacity, and what the usage does to a cycle's fair shares."""

import math

import pytest

from scheduler import Job, Node, Project, Snapshot, plan_cycle
from scheduler.model import Policy
from scheduler.usage import (
    Interval,
    UsageParams,
    capacity_gpu_s,
    decayed_by_queue,
    decayed_gpu_s,
    normalise,
    with_departments,
)

HOUR = 3600.0
DAY = 86400.0


def test_r2_9_off_without_a_half_life_counts_nothing():
    off = UsageParams(half_life_s=0.0)
    assert not off.on
    assert decayed_gpu_s(8, 0, 100, 200, off) == 0.0
    assert normalise({"a": 1.0}, 8, off) == {}


def test_r2_9_a_gpu_second_one_half_life_old_counts_half():
    params = UsageParams(half_life_s=HOUR, window_s=DAY)
    scale = HOUR / math.log(2)
    # 2 GPUs for the last half-life: 2 * integral of 0.5 ** (age / h) from 0 to h = 2 * scale / 2
    assert decayed_gpu_s(2, 0, HOUR, HOUR, params) == pytest.approx(scale)
    # the half-life before it counts half as much
    assert decayed_gpu_s(2, 0, HOUR, 2 * HOUR, params) == pytest.approx(scale / 2)
    # a run still going on counts up to now only
    assert decayed_gpu_s(2, 0, None, HOUR, params) == pytest.approx(scale)


def test_r2_9_only_the_part_of_a_run_inside_the_window_counts():
    params = UsageParams(half_life_s=HOUR, window_s=2 * HOUR)
    now = 10 * HOUR
    assert decayed_gpu_s(1, 0, 7 * HOUR, now, params) == 0.0  # ended before the window
    clipped = decayed_gpu_s(1, 0, now, now, params)  # started long before: the window's part
    assert clipped == pytest.approx(decayed_gpu_s(1, 8 * HOUR, now, now, params))


def test_r2_9_usage_is_normalised_to_the_clusters_capacity_over_the_window():
    # KAI's example: 10 GPUs, a 10-hour window, a queue that used 24 GPU-hours -> 0.24 (with a
    # half-life so long that the decay is nil).
    params = UsageParams(half_life_s=1e12, window_s=10 * HOUR)
    used = decayed_by_queue([Interval("q", 8, 0, 3 * HOUR)], 10 * HOUR, params)
    assert normalise(used, 10, params)["q"] == pytest.approx(0.24)
    # The whole cluster all through the window is 1 whatever the half-life.
    decaying = UsageParams(half_life_s=HOUR, window_s=DAY)
    full = decayed_by_queue([Interval("q", 10, -5 * DAY, None)], DAY, decaying)
    assert normalise(full, 10, decaying)["q"] == pytest.approx(1.0)
    assert capacity_gpu_s(0, decaying) == 0.0 and normalise(full, 0, decaying) == {}


def test_r2_11_a_departments_usage_is_the_sum_of_its_projects():
    usage = with_departments({"a": 0.25, "b": 0.5, "c": 0.1}, {"a": "d1", "b": "d1", "c": None})
    assert usage == {"a": 0.25, "b": 0.5, "c": 0.1, "d1": 0.75}


def test_bad_windows_and_half_lives_are_refused():
    with pytest.raises(ValueError, match="half-life"):
        UsageParams(half_life_s=-1)
    with pytest.raises(ValueError, match="window"):
        UsageParams(half_life_s=HOUR, window_s=0)


def _contest(usage):
    """Two teams with the same quota (1) and weight on 8 GPUs, each asking for 8."""
    nodes = (Node("n1", 8),)
    projects = (Project("heavy", 1.0), Project("idle", 1.0))
    jobs = tuple(Job(team, f"{team}-{i}", 1.0, order=i * 2 + (team == "idle"))
                 for i in range(8) for team in ("heavy", "idle"))  # fmt: skip
    snapshot = Snapshot(nodes=nodes, projects=projects, jobs=jobs, usage=usage)
    return plan_cycle(snapshot, Policy())


def test_r2_9_a_team_that_used_the_cluster_heavily_gets_a_smaller_share_than_an_idle_one():
    # The heavy team held the whole cluster for the last day: its usage yesterday, decayed with
    # a 12-hour half-life over a 7-day window, as the portal and the simulator compute it.
    params = UsageParams(half_life_s=12 * HOUR, window_s=7 * DAY)
    used = decayed_by_queue([Interval("heavy", 8, 0, DAY)], 1.5 * DAY, params)
    usage = normalise(used, 8, params)
    assert usage["heavy"] == pytest.approx(0.375, rel=1e-3)  # 0.5 ** 1 - 0.5 ** 3 of the cluster
    plan = _contest(usage)
    # Phase 1: 1 and 1; 6 over quota. Round weights n = 0.5 each, w' = n + k(n - u):
    # heavy 1 - 0.375 = 0.625, idle 1.0: offers 2.3 and 3.7 -> 2 and 3, the last GPU to idle.
    assert (plan.fair_shares["heavy"], plan.fair_shares["idle"]) == (3, 5)
    assert plan.allocated["heavy"] < plan.allocated["idle"]
    # Without usage data the same teams split the cluster evenly (E10: off in effect).
    even = _contest({})
    assert even.fair_shares["heavy"] == even.fair_shares["idle"] == 4
