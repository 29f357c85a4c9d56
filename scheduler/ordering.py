"""Who is served first (R4.1-R4.3) and who gives up GPUs first (R8.1).

:class:`JobQueues` pops pending jobs in allocation order by walking the queue tree: at every
level the child with the smallest R4.1 key (computed with the best job of its subtree) wins;
after a pop the keys of the popped path are recomputed, so shares update as jobs are placed
within one pass (R4.2). Sibling keys do not depend on each other, so a heap per parent is exact.
:class:`VictimQueue` yields running jobs in the reverse order (R8.1).

With user fair share (R21.4, R21.7) a project's jobs sit in its users' queues one level below
it, so the same walk picks the user furthest under their share first, and the same victim order
takes first from the user most over theirs; jobs are keyed by their leaf queue
(:func:`~scheduler.queues.leaf_of`).
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache

from .model import Job
from .queues import QueueState, leaf_of


def job_order_key(job: Job) -> tuple:
    """R4.3 inside a project: higher priority first (with service bands, the lower band among
    equal classes, L2), then older, then name."""
    return (-job.priority_value, job.band, job.order, job.name)


def victim_order_key(job: Job) -> tuple:
    """R8.1 inside a project: lowest priority first (with service bands, the highest band among
    equal classes, L2), then the most recently created job."""
    return (job.priority_value, -job.band, -job.order, _descending(job.name))


@lru_cache(maxsize=1 << 16)
def _descending(name: str) -> tuple[int, ...]:
    """A key that sorts names in reverse (the last tie-breaker of R8.1), computed once a name."""
    return tuple(-ord(c) for c in name)


class JobQueues:
    """Pending jobs in allocation order across the queue hierarchy (R4.1, R4.2, R4.3)."""

    def __init__(self, queues: dict[str, QueueState], jobs: Iterable[Job], total: int):
        self.total = total
        self.queues = queues
        self.jobs: dict[str, deque[Job]] = {}
        for job in sorted(jobs, key=job_order_key):
            leaf = leaf_of(queues, job)
            if leaf is not None:
                self.jobs.setdefault(leaf.name, deque()).append(job)
        self.heaps: dict[str | None, list] = {}
        self.version: dict[str, int] = {}
        self.counter = 0
        self._dirty: QueueState | None = None
        for name in self.jobs:
            self._refresh_path(queues[name])

    def __bool__(self) -> bool:
        self._flush()
        return bool(self.heaps.get(None))

    def reorder(self, key: Callable[[Job], tuple]) -> None:
        """Re-sort every project's remaining jobs by `key` (backfill's B6); the order between
        queues (R4.1, R4.2) is recomputed from the new heads."""
        self._flush()
        for name, pending in self.jobs.items():
            self.jobs[name] = deque(sorted(pending, key=key))
            self._refresh_path(self.queues[name])

    def _head(self, queue: QueueState) -> Job | None:
        """The next job of a queue's subtree (the head of its best child for a department)."""
        if queue.leaf:
            pending = self.jobs.get(queue.name)
            return pending[0] if pending else None
        top = self._top(queue.name)
        return self._head(top) if top is not None else None

    def _top(self, parent: str | None) -> QueueState | None:
        heap = self.heaps.get(parent)
        while heap:
            *_, version, name = heap[0]
            if self.version.get(name) == version:
                return self.queues[name]
            heapq.heappop(heap)
        return None

    def _push(self, queue: QueueState) -> None:
        self.version[queue.name] = self.version.get(queue.name, 0) + 1
        head = self._head(queue)
        if head is None:
            return
        key = queue.allocation_key(head.milli_total, self.total)
        parent = queue.parent.name if queue.parent is not None else None
        entry = (key, queue.name, self.version[queue.name], queue.name)
        heapq.heappush(self.heaps.setdefault(parent, []), entry)

    def _refresh_path(self, queue: QueueState) -> None:
        node: QueueState | None = queue
        while node is not None:
            self._push(node)
            node = node.parent

    def _flush(self) -> None:
        if self._dirty is not None:
            self._refresh_path(self._dirty)
            self._dirty = None

    def drain(self) -> list[Job]:
        """Every job not popped yet, emptying the queues (in no particular order: for a caller
        that no longer needs the order, allocate once nothing more can start)."""
        left = [job for pending in self.jobs.values() for job in pending]
        self.jobs = {}
        self.heaps = {}
        self._dirty = None
        return left

    def pop(self) -> Job | None:
        """The next job in allocation order, or None when every queue is empty."""
        self._flush()
        queue = self._top(None)
        while queue is not None and not queue.leaf:
            queue = self._top(queue.name)
        if queue is None:
            return None
        job = self.jobs[queue.name].popleft()
        self._dirty = queue  # keys are recomputed after the caller acted on the job
        return job


class VictimQueue:
    """Running candidate victims in R8.1 order: between queues the one that would be served
    last gives first (re-evaluated after every pop with what it already gave), inside a queue
    the lowest priority and newest job first."""

    def __init__(
        self,
        by_queue: dict[str, list[Job]],
        queues: dict[str, QueueState],
        total: int,
        alive: Callable[[Job], bool],
        base: dict[str, int] | None = None,
    ):
        self.lists = by_queue
        self.queues = queues
        self.total = total
        self.alive = alive
        # `base` is shared by the victim queues of one action: the first entry of each list
        # that may still be alive. Evictions committed in a cycle are final, so skipping past
        # them once keeps later searches from walking the same dead entries again.
        self.base = base if base is not None else {}
        self.cursor = {name: self.base.get(name, 0) for name in by_queue}
        self.taken: dict[str, int] = {}
        self.need: int | None = None  # set by `smallest_sufficient`
        self.popped: set = set()

    def smallest_sufficient(self, demand: int) -> VictimQueue:
        """Allot's option for E5: inside a project, among its lowest-priority candidates, take
        the smallest job that alone covers what is still needed (newest first on ties), and
        fall back to KAI's newest-first order when none does. Off by default."""
        self.need = demand
        return self

    def _next_of(self, name: str) -> Job | None:
        if self.need is not None:
            return self._smallest_sufficient_of(name)
        jobs = self.lists[name]
        index = self.cursor[name]
        while index < len(jobs) and not self.alive(jobs[index]):
            index += 1
            if self.base.get(name, 0) == index - 1:
                self.base[name] = index
        self.cursor[name] = index
        return jobs[index] if index < len(jobs) else None

    def _smallest_sufficient_of(self, name: str) -> Job | None:
        alive = [j for j in self.lists[name] if j.key not in self.popped and self.alive(j)]
        if not alive:
            return None
        lowest = [j for j in alive if j.rank == alive[0].rank]
        still_needed = self.need - sum(
            v for k, v in self.taken.items() if self.queues[k].parent is None
        )
        covering = [j for j in lowest if j.milli_total >= still_needed]
        if not covering:
            return alive[0]
        return min(covering, key=lambda j: (j.milli_total, -j.order))

    def _taken(self, queue: QueueState) -> int:
        return self.taken.get(queue.name, 0)

    def __iter__(self) -> Iterator[Job]:
        while True:
            best = None
            best_key = None
            for name in self.lists:
                job = self._next_of(name)
                if job is None:
                    continue
                key = self._key(self.queues[name], job)  # `name` is the job's leaf
                if best_key is None or key < best_key:
                    best, best_key = job, key
            if best is None:
                return
            leaf = leaf_of(self.queues, best)
            if self.need is None:
                self.cursor[leaf.name] += 1
            self.popped.add(best.key)
            queue: QueueState | None = leaf
            while queue is not None:
                self.taken[queue.name] = self._taken(queue) + best.milli_total
                queue = queue.parent
            yield best

    def _key(self, leaf: QueueState, job: Job) -> tuple:
        """Compare root-first, level by level, like the allocation tree walk (R4.2, R8.1)."""
        return tuple(
            (*q.victim_key(self._taken(q), job.milli_total, self.total), q.name)
            for q in leaf.path()
        )


class ActionVictims:
    """The running preemptible jobs an action may take victims from, grouped by leaf queue (the
    project, or the user's queue with user fair share, R21.4) and sorted once per action in R8.1
    order; each search gets a :class:`VictimQueue` over some of the leaves."""

    def __init__(
        self,
        jobs: Iterable[Job],
        queues: dict[str, QueueState],
        total: int,
        alive: Callable[[Job], bool],
        smallest_sufficient: bool = False,
    ):
        self.smallest = smallest_sufficient
        self.by_queue: dict[str, list[Job]] = {}
        for job in jobs:
            if job.preemptible:
                self.by_queue.setdefault(leaf_of(queues, job).name, []).append(job)
        for listed in self.by_queue.values():
            listed.sort(key=victim_order_key)
        self.queues = queues
        self.total = total
        self.alive = alive
        self.base: dict[str, int] = {}

    def lowest_priority(self, project: str) -> tuple[int, int] | None:
        """Rank (priority, then band, L2) of the leaf queue's (a project's, or a user's in it,
        R21.8) lowest-priority victim still alive, or None."""
        jobs = self.by_queue.get(project, ())
        index = self.base.get(project, 0)
        while index < len(jobs) and not self.alive(jobs[index]):
            index += 1
        self.base[project] = index
        if index < len(jobs):
            return jobs[index].rank
        return None

    def queue(
        self, projects: Iterable[str], demand: int, keep: Callable[[Job], bool] | None = None
    ) -> VictimQueue:
        """Victims from the leaf queues named `projects` (optionally only jobs `keep` accepts)
        for a job asking `demand` thousandths, in R8.1 order (or the E5 option's)."""
        lists = {p: self.by_queue[p] for p in projects if p in self.by_queue}
        if keep is None:
            victims = VictimQueue(lists, self.queues, self.total, self.alive, self.base)
        else:
            lists = {p: [j for j in jobs if keep(j)] for p, jobs in lists.items()}
            victims = VictimQueue(lists, self.queues, self.total, self.alive)
        return victims.smallest_sufficient(demand) if self.smallest else victims
