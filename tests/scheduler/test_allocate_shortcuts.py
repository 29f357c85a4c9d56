"""Allocate's and the forward run's shortcuts change no plan (issue 37's what-if speed): in
allocate (scheduler/actions/allocate.py) a shape that found no room is not tried again in the
same pass, and once no device has room the jobs left are told their reasons without being
placed. On random clusters (whole, fractional, GPU-memory and CPU-only pods, gangs, limits,
interactive jobs, failed and cordoned devices) every cycle's plan, reasons included, is the one
the full search gives; and when the ETA's forward run (scheduler/eta.py) takes a cycle as the
last of its step without planning the next, the next is indeed empty."""

from __future__ import annotations

import random

import pytest

from scheduler import Job, Node, PodPlacement, Project, Snapshot, eta
from scheduler.actions import allocate as allocate_module
from scheduler.apply import apply_plan
from scheduler.cycle import plan_cycle
from scheduler.model import Policy

GIB = 1024**3


def random_cluster(seed: int) -> Snapshot:
    rng = random.Random(seed)
    nodes = []
    for i in range(rng.randint(3, 10)):
        gpus = rng.choice((2, 4, 8))
        failed = (rng.randrange(gpus),) if rng.random() < 0.15 else ()
        nodes.append(Node(f"n{i}", gpus, cpu_millis=rng.choice((None, 64000)),
                          memory_bytes=rng.choice((None, 256 * GIB)),
                          gpu_memory_bytes=80 * GIB, failed_devices=failed,
                          schedulable=rng.random() > 0.1))  # fmt: skip
    teams = rng.randint(1, 4)
    total = sum(n.gpus for n in nodes)
    limits = (None, None, total // 2)
    projects = tuple(
        Project(f"t{i}", rng.randint(0, total // teams), order=i, limit=rng.choice(limits))
        for i in range(teams)
    )
    jobs: list[Job] = []
    for node in nodes:
        device = 0
        while device < node.gpus and rng.random() < 0.8:
            size = min(rng.choice((1, 2)), node.gpus - device)
            placement = (PodPlacement(node.name, tuple(range(device, device + size))),)
            jobs.append(Job(f"t{rng.randrange(teams)}", f"r{len(jobs)}", size, order=len(jobs),
                            started=0.0, expected_s=600.0, placement=placement))  # fmt: skip
            device += size
    for i in range(rng.randint(20, 120)):
        kind = rng.random()
        common = {"order": len(jobs), "expected_s": 600.0}
        if kind < 0.5:
            job = Job(f"t{rng.randrange(teams)}", f"q{i}", rng.choice((1, 1, 2, 4, 8)),
                      pods=rng.choice((1, 1, 1, 2)), **common)  # fmt: skip
        elif kind < 0.65:
            job = Job(f"t{rng.randrange(teams)}", f"q{i}", rng.choice((0.25, 0.5)),
                      pods=rng.choice((1, 1, 3)), **common)  # fmt: skip
        elif kind < 0.75:
            job = Job(f"t{rng.randrange(teams)}", f"q{i}", 0, gpu_memory_bytes=20 * GIB,
                      **common)  # fmt: skip
        elif kind < 0.85:
            job = Job(f"t{rng.randrange(teams)}", f"q{i}", 1, cpu_millis=16000,
                      memory_bytes=64 * GIB, pods=rng.choice((1, 2)), **common)  # fmt: skip
        elif kind < 0.92:
            job = Job(f"t{rng.randrange(teams)}", f"q{i}", 1, type="interactive", **common)
        else:
            job = Job(f"t{rng.randrange(teams)}", f"q{i}", 0, cpu_millis=4000, **common)
        jobs.append(job)
    if rng.random() < 0.5:  # half the clusters have only GPU work waiting: the drain applies
        jobs = [j for j in jobs if j.running or j.gpus or j.gpu_memory_bytes is not None]
    return Snapshot(tuple(nodes), projects, tuple(jobs), now=100.0)


def cycles(snapshot: Snapshot, policy: Policy, count: int = 4) -> list:
    plans = []
    for _ in range(count):
        plan = plan_cycle(snapshot, policy)
        plans.append(plan)
        snapshot = apply_plan(snapshot, plan)
    return plans


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("policy", [Policy(), Policy(reclaim=False, preempt=False,
                                                     consolidation=False)])  # fmt: skip
def test_the_shortcuts_give_the_full_searchs_plans(monkeypatch, seed, policy):
    snapshot = random_cluster(seed)
    fast = cycles(snapshot, policy)
    monkeypatch.setattr(allocate_module, "placement_shape", lambda job: None)
    monkeypatch.setattr(allocate_module, "no_gpu_room", lambda session: False)
    assert cycles(snapshot, policy) == fast


def test_the_drain_is_taken_on_a_full_cluster_with_gpu_work_waiting(monkeypatch):
    """The comparison above is not vacuous: on a full cluster the drain runs."""
    used = []
    real = allocate_module._refuse_all
    monkeypatch.setattr(
        allocate_module, "_refuse_all", lambda s, j: used.append(len(j)) or real(s, j)
    )
    nodes = (Node("n1", 2),)
    jobs = (Job("t", "r", 2, order=0, placement=(PodPlacement("n1", (0, 1)),), started=0.0),
            Job("t", "q1", 1, order=1), Job("t", "q2", 2, order=2))  # fmt: skip
    plan = plan_cycle(Snapshot(nodes, (Project("t", 2),), jobs, now=1.0))
    assert used == [2]
    assert set(plan.pending_reasons) == {("t", "q1"), ("t", "q2")}


ALLOCATE_ONLY = Policy(reclaim=False, preempt=False, consolidation=False)


@pytest.mark.parametrize("seed", range(60))
def test_a_cycle_said_to_settle_is_followed_by_an_empty_one(seed):
    snapshot, said = random_cluster(seed), 0
    for _ in range(4):
        plan = plan_cycle(snapshot, ALLOCATE_ONLY)
        snapshot = apply_plan(snapshot, plan)
        if eta.settles(snapshot, ALLOCATE_ONLY, plan):
            said += 1
            assert plan_cycle(snapshot, ALLOCATE_ONLY).empty
    assert said  # each cluster's first cycle only starts jobs


@pytest.mark.parametrize("seed", range(20))
def test_the_forward_runs_estimates_are_those_of_planning_every_cycle(monkeypatch, seed):
    snapshot = random_cluster(seed)
    fast = eta.estimate_starts(snapshot, ALLOCATE_ONLY, 4 * 3600.0)
    monkeypatch.setattr(eta, "settles", lambda *args: False)
    assert eta.estimate_starts(snapshot, ALLOCATE_ONLY, 4 * 3600.0) == fast


def test_no_shortcut_when_a_cycle_may_evict():
    snapshot = random_cluster(1)
    plan = plan_cycle(snapshot, ALLOCATE_ONLY)
    assert eta.settles(snapshot, ALLOCATE_ONLY, plan)
    assert not eta.settles(snapshot, Policy(), plan)
    assert not eta.settles(snapshot, Policy(reclaim=False, preempt=False, consolidation=False,
                                            backfill=True), plan)  # fmt: skip
