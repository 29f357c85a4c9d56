"""The eviction search shared by consolidation, reclaim and preempt (R8).

Victims are popped one at a time from a victim queue (R8.1) into an accumulated set; a cheap
filter skips sets that cannot free enough GPUs (R8.2) — each accumulated set, as KAI does, and
each sub-set a generator proposes, which only saves simulating a scenario that must fail.
Scenario generators propose sub-sets: first the accumulated victims on the latest victim's
node(s) (node-local greedy), then growing prefixes of nodes sorted by capacity after eviction
(multi-node) (R8.3). A scenario is simulated
with checkpoint and rollback: evict its victims, then take the pending job and the victims through
allocation order; victims that find a place are kept or moved, only the rest are evicted (R8.5);
then the action's validator decides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..model import Job, PodPlacement
from ..ordering import JobQueues
from ..placement import place_job, pools_for
from ..session import Session, nodes_of
from ..state import FULL, pod_milli

Validator = Callable[[Job, list[Job], dict[str, tuple[int, int]]], bool]


@dataclass
class Outcome:
    """A committed-able result: where the job goes, who is evicted, who moves where."""

    placement: tuple[PodPlacement, ...]
    evicted: list[Job] = field(default_factory=list)
    moved: list[tuple[Job, tuple[PodPlacement, ...]]] = field(default_factory=list)
    before: dict[str, tuple[int, int]] = field(default_factory=dict)


def allocated_before(session: Session) -> dict[str, tuple[int, int]]:
    """Every queue's (allocated, allocated non-preemptible) at the start of a job's search."""
    return {name: (q.allocated, q.allocated_np) for name, q in session.queues.items()}


def solve(
    session: Session,
    job: Job,
    victims: Iterable[Job],
    validator: Validator,
    max_candidates: int | None = None,
) -> Outcome | None:
    """Find the first valid scenario for `job` among growing victim sets (R8.2-R8.5), leave it
    applied in the session's state and return it; None (state unchanged) when none is valid."""
    before = allocated_before(session)
    accumulated: list[Job] = []
    room = Room(session, job)
    tried: set[frozenset] = set()
    for count, victim in enumerate(victims):
        if max_candidates is not None and count >= max_candidates:
            break
        accumulated.append(victim)
        room.add(victim)
        if not room.enough():
            continue
        for scenario in scenarios(session, job, accumulated, victim):
            fingerprint = frozenset(v.key for v in scenario)
            if not scenario or fingerprint in tried:
                continue
            tried.add(fingerprint)
            if len(scenario) < len(accumulated) and not enough_room(session, job, scenario):
                continue  # R8.2's filter on the sub-set: it cannot succeed, skip simulating it
            outcome = simulate(session, job, scenario, validator, before)
            if outcome is not None:
                return outcome
    return None


def freed_by_node(session: Session, victims: list[Job]) -> dict[str, dict[int, int]]:
    """Thousandths each victim set would free, per node and device."""
    freed: dict[str, dict[int, int]] = {}
    for victim in victims:
        for pod in session.state.placement.get(victim.key, ()):
            per_device = freed.setdefault(pod.node, {})
            milli = pod_milli(victim, pod)
            for device in pod.devices:
                per_device[device] = per_device.get(device, 0) + milli
    return freed


def capacity_after(session: Session, node_name: str, freed: dict[int, int]) -> tuple[int, int]:
    """(free whole devices, free thousandths) of a node once `freed` is released."""
    node = session.state.nodes[node_name]
    whole = node.whole_free
    milli = sum(FULL - u for u in node.used)
    for device, amount in freed.items():
        if device < node.gpus and node.used[device] > 0 and node.used[device] - amount <= 0:
            whole += 1
        milli += amount
    return whole, milli


def enough_room(session: Session, job: Job, victims: list[Job]) -> bool:
    """R8.2: can idle + releasing + freed GPUs hold the job's pods even greedily? A necessary
    condition only; the simulation decides."""
    room = Room(session, job)
    for victim in victims:
        room.add(victim)
    return room.enough()


class Room:
    """R8.2's count for one job, kept up to date as victims accumulate: what the idle and
    releasing GPUs of its pools hold (whole pods per node, R5.3; thousandths for a fraction),
    with each victim's devices freed. Adding a victim recounts only the nodes it runs on, so a
    search over n victims costs O(n) recounts instead of O(n^2)."""

    def __init__(self, session: Session, job: Job):
        self.session = session
        self.job = job
        self.indexes = pools_for(session.state, job)
        self.pools = session.queue(job).node_pools
        self.freed: dict[str, dict[int, int]] = {}
        self.counted: dict[str, int] = {}  # freed node -> what it adds to `count` now
        nodes = session.state.nodes
        if not job.whole:
            self.count = sum(index.free_milli for index in self.indexes)
            return
        per_pod = job.whole_devices_per_pod
        self.count = 0
        for index in self.indexes:
            for free, bucket in enumerate(index.buckets):
                self.count += free // per_pod * len(bucket)
            self.count += sum(nodes[name].whole_free // per_pod for name in index.touched)

    def allowed(self, name: str) -> bool:
        """The job may run on this node: eligible and in one of its project's pools."""
        node = self.session.state.nodes[name]
        return node.eligible and (not self.pools or node.pool in self.pools)

    def _indexed(self, name: str) -> bool:
        """The node is counted in one of the job's pool indexes (in a bucket or touched)."""
        whole = self.session.state.nodes[name].whole_free
        return any(name in i.touched or name in i.buckets[whole] for i in self.indexes)

    def add(self, victim: Job) -> None:
        """Free the victim's devices and recount the nodes it runs on."""
        changed: set[str] = set()
        for pod in self.session.state.placement.get(victim.key, ()):
            per_device = self.freed.setdefault(pod.node, {})
            milli = pod_milli(victim, pod)
            for device in pod.devices:
                per_device[device] = per_device.get(device, 0) + milli
            if not self.job.whole:
                if self.allowed(pod.node):
                    self.count += milli * len(pod.devices)
            else:
                changed.add(pod.node)
        if not changed:
            return
        per_pod = self.job.whole_devices_per_pod
        nodes = self.session.state.nodes
        for name in changed:
            before = self.counted.get(name)
            if before is None:
                before = nodes[name].whole_free // per_pod if self._indexed(name) else 0
            after = 0
            if self.allowed(name):
                after = capacity_after(self.session, name, self.freed[name])[0] // per_pod
            self.count += after - before
            self.counted[name] = after

    def enough(self) -> bool:
        """Whether the count covers the job (R8.2). A GPU-memory request takes a smaller share
        of a larger device than its accounting fraction (R3.4, R5.5): no GPU count is a
        necessary condition for it, so only the simulation decides."""
        if self.job.gpu_memory_bytes is not None:
            return True
        if not self.job.whole:
            return self.count >= self.job.milli_total
        return self.count >= self.job.pods


def scenarios(session: Session, job: Job, accumulated: list[Job], latest: Job):
    """Victim sub-sets to try, in KAI's generator order (R8.3)."""
    placement = session.state.placement
    latest_nodes = {p.node for p in placement.get(latest.key, ())}
    yield [v for v in accumulated if any(p.node in latest_nodes for p in placement[v.key])]
    yield from _multi_node(session, job, accumulated)


def _multi_node(session: Session, job: Job, accumulated: list[Job]):
    """Growing prefixes of the victims' nodes, sorted by capacity after eviction (R8.3)."""
    placement = session.state.placement
    first_seen: dict[str, int] = {}
    for rank, victim in enumerate(accumulated):
        for pod in placement[victim.key]:
            first_seen.setdefault(pod.node, rank)
    freed = freed_by_node(session, accumulated)
    capacity = {n: capacity_after(session, n, freed.get(n, {}))[1] for n in first_seen}
    nodes = sorted(first_seen, key=lambda n: (capacity[n], first_seen[n]))
    covered, size = 0, 0
    while size < len(nodes) and covered < job.milli_total:
        covered += capacity[nodes[size]]
        size += 1
    step = 1
    while True:
        chosen = set(nodes[:size])
        yield [v for v in accumulated if any(p.node in chosen for p in placement[v.key])]
        if size >= len(nodes):
            return
        size = min(len(nodes), size + step)
        step *= 2


def simulate(
    session: Session,
    job: Job,
    scenario: list[Job],
    validator: Validator,
    before: dict[str, tuple[int, int]],
) -> Outcome | None:
    """Try one scenario (R8.5); on success leave it applied and return it, else roll back."""
    state = session.state
    checkpoint = state.checkpoint()
    old = {v.key: state.unplace(v) for v in scenario}
    outcome = Outcome(placement=())
    # The preemptor and the victims in allocation order (R4.1-R4.3), keys recomputed after each
    # placement as allocation does.
    order = JobQueues(session.queues, [job, *scenario], session.total)
    while (current := order.pop()) is not None:
        if current is job:
            placement = (
                None if session.capacity_block(job) else place_job(state, job, session.policy)
            )
            if placement is None:
                state.rollback(checkpoint)
                return None
            outcome.placement = placement
            continue
        _replace_victim(session, current, old[current.key], outcome)
    outcome.before = before
    counted = outcome.evicted
    if not session.policy.allow_consolidating_reclaim:
        counted = counted + [victim for victim, _ in outcome.moved]  # R9.7 off
    if not validator(job, counted, before):
        state.rollback(checkpoint)
        return None
    state.commit(checkpoint)
    return outcome


def _replace_victim(session: Session, victim: Job, old, outcome: Outcome) -> None:
    """Take a victim through normal placement (R8.5): idle devices elsewhere outrank its own
    releasing ones (R5.1 availability), which is what lets consolidation move jobs. A whole-GPU
    or CPU-only victim placed back on its own node(s) is kept where it was; a fraction goes to
    the device GPU packing picks (R5.4), so fractions consolidate within a node too; elsewhere
    it is moved; nowhere, evicted."""
    state = session.state
    if session.capacity_block(victim) is None:
        checkpoint = state.checkpoint()
        placement = place_job(state, victim, session.policy)
        if placement is not None and _same_nodes(placement, old) and not victim.shared:
            state.rollback(checkpoint)
            if _still_free(session, victim, old):
                state.place(victim, old)
                return
            placement = place_job(state, victim, session.policy)
        if placement is not None:
            outcome.moved.append((victim, placement))
            return
    outcome.evicted.append(victim)


def _same_nodes(a: tuple[PodPlacement, ...], b: tuple[PodPlacement, ...]) -> bool:
    return sorted(p.node for p in a) == sorted(p.node for p in b)


def _still_free(session: Session, job: Job, placement: tuple[PodPlacement, ...]) -> bool:
    need: dict[tuple[str, int], int] = {}
    for pod in placement:
        milli = pod_milli(job, pod)
        for device in pod.devices:
            need[(pod.node, device)] = need.get((pod.node, device), 0) + milli
    for (name, device), milli in need.items():
        node = session.state.nodes.get(name)
        if node is None or not node.eligible or node.used[device] + milli > FULL:
            return False
    for pod in placement:  # CPU and memory (issue 26); pods of a gang on one node add up
        node = session.state.nodes[pod.node]
        pods = sum(1 for p in placement if p.node == pod.node)
        if node.cpu_free is not None and job.cpu_millis * pods > node.cpu_free:
            return False
        if node.memory_free is not None and job.memory_bytes * pods > node.memory_free:
            return False
    return True


def record_moves(session: Session, job: Job, outcome: Outcome, action: str, rule: str) -> None:
    """Record every victim the simulation moved elsewhere for `job` (R8.5)."""
    for victim, placement in outcome.moved:
        session.record(
            "move",
            victim,
            action,
            f"moved to {nodes_of(placement)} so {job.project}/{job.name} can start ({rule})",
            placement,
            job.key,
        )
