"""The what-if keeps its forward runs (scheduler/whatif.py, issue 37): previews of two changes on
one state run the "before" once, a kept run is the very answer a fresh one gives, and any change
of state (the clock, a job, a node, a project, the usage) is a fresh run."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from scheduler import Job, Node, PodPlacement, Project, Snapshot
from scheduler import whatif as whatif_module
from scheduler.model import Policy
from scheduler.whatif import (
    VICTIM_CANDIDATES,
    NodeChange,
    ProjectChange,
    clear_forecasts,
    forecast,
    what_if,
)

HORIZON = 6 * 3600.0


def random_state(seed: int) -> Snapshot:
    """A random cluster: nodes of 4 or 8 GPUs about three quarters full of 1-4-GPU jobs of
    random run times (some past their end, some unknown), and a queue of 1-8-GPU jobs."""
    rng = random.Random(seed)
    nodes = tuple(Node(f"n{i:02d}", rng.choice((4, 8))) for i in range(rng.randint(6, 12)))
    teams = rng.randint(2, 5)
    total = sum(n.gpus for n in nodes)
    quota = total // teams
    projects = tuple(Project(f"t{i}", rng.randint(0, quota), order=i) for i in range(teams))
    jobs: list[Job] = []
    for node in nodes:
        device = 0
        while device < node.gpus and rng.random() < 0.75:
            size = min(rng.choice((1, 2, 4)), node.gpus - device)
            expected = rng.choice((None, rng.uniform(60, 4 * 3600), rng.uniform(60, 8 * 3600)))
            placement = (PodPlacement(node.name, tuple(range(device, device + size))),)
            jobs.append(Job(f"t{rng.randrange(teams)}", f"r{len(jobs)}", size, order=len(jobs),
                            started=rng.uniform(0, 3000), expected_s=expected,
                            placement=placement))  # fmt: skip
            device += size
    for i in range(rng.randint(10, 60)):
        jobs.append(Job(f"t{rng.randrange(teams)}", f"q{i}", rng.choice((1, 1, 2, 4, 8)),
                        order=len(jobs), expected_s=rng.uniform(60, 4 * 3600)))  # fmt: skip
    usage = {p.name: rng.random() / teams for p in projects}
    return Snapshot(nodes, projects, tuple(jobs), now=3600.0, usage=usage)


def changes_for(state: Snapshot) -> list[list]:
    first, last = state.projects[0].name, state.nodes[-1].name
    return [[ProjectChange(first, {"quota": state.projects[0].quota + 8})],
            [NodeChange(last, "drain")]]  # fmt: skip


@pytest.fixture(autouse=True)
def fresh():
    clear_forecasts()
    yield
    clear_forecasts()


@pytest.fixture
def runs(monkeypatch):
    """Counts the forward runs made (a kept one is not a run)."""
    made = []
    real = whatif_module.forecast

    def counted(*args):
        made.append(args[0])
        return real(*args)

    monkeypatch.setattr(whatif_module, "forecast", counted)
    return made


def test_two_previews_on_one_state_run_the_before_once(runs):
    state = random_state(1)
    quota, drain = changes_for(state)
    what_if(state, quota, horizon_s=HORIZON)
    assert len(runs) == 2
    what_if(state, drain, horizon_s=HORIZON)
    assert len(runs) == 3  # only the drained run: the before is kept


@pytest.mark.parametrize("seed", range(6))
def test_a_kept_answer_equals_a_fresh_one_on_a_random_state(seed):
    state = random_state(seed)
    quota, drain = changes_for(state)
    what_if(state, quota, horizon_s=HORIZON)  # keeps the before
    kept = what_if(state, drain, horizon_s=HORIZON)
    clear_forecasts()
    fresh = what_if(state, drain, horizon_s=HORIZON)
    assert kept == fresh
    policy = replace(Policy(), max_reclaim_candidates=VICTIM_CANDIDATES)
    assert kept.before == forecast(state, {}, policy, HORIZON)  # the uncached function


def test_a_caller_altering_its_answer_leaves_the_kept_run_alone():
    state = random_state(2)
    quota, drain = changes_for(state)
    first = what_if(state, quota, horizon_s=HORIZON)
    expected = dict(first.before.starts)
    first.before.starts.clear()
    first.before.series[0][1].clear()
    again = what_if(state, drain, horizon_s=HORIZON)
    assert again.before.starts == expected
    assert again.before.series[0][1]


def changed_states(state: Snapshot) -> dict[str, Snapshot]:
    """The state with one thing different, as the portal would read it after that change."""
    ran = next(j for j in state.jobs if j.running)
    waits = next(j for j in state.jobs if not j.running)
    jobs = state.jobs
    first = state.projects[0]
    return {
        "the clock": replace(state, now=state.now + 60),
        "a running job's run time": replace(state, jobs=tuple(
            replace(j, expected_s=(j.expected_s or 600) * 2) if j is ran else j for j in jobs)),
        "a job submitted": replace(state, jobs=(*jobs, Job(first.name, "new", 1,
                                                          order=len(jobs) + 1))),
        "a job deleted": replace(state, jobs=tuple(j for j in jobs if j is not waits)),
        "a node cordoned": replace(state, nodes=(replace(state.nodes[0], schedulable=False),
                                                 *state.nodes[1:])),
        "a quota": replace(state, projects=(replace(first, quota=first.quota + 1),
                                            *state.projects[1:])),
        "the usage": replace(state, usage={**state.usage, first.name: 0.9}),
    }  # fmt: skip


@pytest.mark.parametrize("what", list(changed_states(random_state(3))))
def test_any_change_of_state_is_a_fresh_run(runs, what):
    state = random_state(3)
    quota, _ = changes_for(state)
    what_if(state, quota, horizon_s=HORIZON)
    other = changed_states(state)[what]
    made = len(runs)
    result = what_if(other, quota, horizon_s=HORIZON)
    assert runs[made] is other  # the before of the changed state was run, not the kept one
    policy = replace(Policy(), max_reclaim_candidates=VICTIM_CANDIDATES)
    assert result.before == forecast(other, {}, policy, HORIZON)
