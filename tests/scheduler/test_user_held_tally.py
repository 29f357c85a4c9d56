"""The per-user tally the R21.1-R21.3 check reads (ClusterState.user_held) stays equal to a
recount over the jobs holding a placement through places, unplaces and rollbacks: the check
reads it instead of counting the snapshot at every placement attempt (issue 36)."""

from __future__ import annotations

from scheduler import Job, Node, PodPlacement, Project, Snapshot
from scheduler.queues import build_queues
from scheduler.state import ClusterState

NODES = (Node("n1", 8), Node("n2", 8))


def recount(state: ClusterState) -> dict[tuple[str, str], list[int]]:
    held: dict[tuple[str, str], list[int]] = {}
    for key in state.placement:
        job = state.jobs[key]
        tally = held.setdefault((job.project, job.user), [0, 0, 0])
        tally[0] += job.milli_total
        tally[1] += 1
        tally[2] += not job.preemptible
    return held


def nonzero(held: dict) -> dict:
    return {k: v for k, v in held.items() if any(v)}


def test_user_tally_follows_places_unplaces_and_rollbacks():
    running = Job("p", "a1", 2, user="ann", placement=(PodPlacement("n1", (0, 1)),))
    session = Job("p", "s1", 1, user="ann", type="interactive",
                  placement=(PodPlacement("n1", (2,)),))  # fmt: skip
    waiting = Job("p", "b1", 4, user="bob")
    jobs = (running, session, waiting)
    snapshot = Snapshot(NODES, (Project("p", quota=16),), jobs)
    state = ClusterState(NODES, build_queues(snapshot), snapshot.jobs)
    assert state.user_held == {("p", "ann"): [3000, 2, 1]} == recount(state)
    mark = state.checkpoint()
    state.place(waiting, (PodPlacement("n2", (0, 1, 2, 3)),))
    state.unplace(running)
    assert nonzero(state.user_held) == recount(state) == {
        ("p", "ann"): [1000, 1, 1], ("p", "bob"): [4000, 1, 0]}  # fmt: skip
    state.place(running, (PodPlacement("n2", (4, 5)),))  # moved: counted once
    assert nonzero(state.user_held) == recount(state)
    state.rollback(mark)
    assert nonzero(state.user_held) == recount(state) == {("p", "ann"): [3000, 2, 1]}
