"""Scenario files (docs/scenarios.md): loading, validation and replay.

A scenario describes nodes, departments, projects, an optional `policy` (fields of
:class:`~scheduler.model.Policy`) and steps of submissions, deletions and expectations. Jobs are
submitted one at a time, each followed by cycles until the cluster settles (R1.3).

Allot's additions for backfill (B1-B6), all optional, so older files replay unchanged:
- `submit[].expected_s`: the job's predicted run time in seconds (`Job.expected_s`).
- a step's `at`: move the scenario clock (`Snapshot.now`, 0 at the start) to this time before the
  step's submissions and deletions; it may not go back. Started jobs record the clock.
- `expect.reservations`: `{"project/name": t}`, the reserved jobs and their predicted starts
  (`Plan.reservations`, compared to 0.001; jobs not listed must hold none).
- `expect.backfilled`: `["project/name"]`, running jobs that were started by backfill (B2).
- `expect.reason_contains`: `{"project/name": "text"}`, text in a pending job's reason.

Allot's additions for CPU, memory, GPU memory and failed devices (issue 26, docs/scenarios.md):
- `nodes[].cpu`, `nodes[].memory` (Kubernetes quantities: `64`, `"500m"`, `"512Gi"`; absent =
  not tracked), `nodes[].gpu_memory` (per device, instead of `gpu_memory_mib`, MiB),
  `nodes[].failed_devices` (`[3]`).
- `submit[].cpu`, `submit[].memory`, `submit[].gpu_memory` (per pod); with `gpu_memory`, `gpus`
  may be left out: it is the memory over the smallest device memory in the cluster (R3.4).
- `projects[].cpu_limit`, `projects[].memory_limit`, and the same on `departments[]` (R3.1 for
  every queue of the path).
- `projects[].user_limits`: per-user limits inside the project (R21.1-R21.3, issue 36).
- `projects[].user_fair_share` (true/false) and `projects[].user_weights` (`{"ann": 2}`): fair
  share between the project's users (R21.4-R21.8); `expect.user_fair_share` and
  `expect.user_allocated` (`{"team-a/ann": 4}`) check a user's share and the GPUs their running
  jobs hold.
- a step's `failed_devices`: `{"node": [devices]}`, the node's failed devices from then on (an
  empty list heals them), applied before the step's submissions, then cycles until it settles.
- `expect.allocated_cpu` (`{"project": cores}`), `expect.allocated_memory` (`{"project":
  "16Gi"}`), `expect.devices` (`{"project/name": [device, ...]}`, every pod's devices, sorted),
  and `expect.decision_contains` (`{"project/name": "text"}`, text in the reason of a decision
  about the job made while the step's cycles settled, e.g. an eviction's).

Allot's additions for budgets (issue 36, R20, docs/budgets.md; scheduler_tools/budgets.py):
- `budgets`: `[{"name", "project" | "department", "user"?, "gpu_hours", "kind": soft | hard,
  "over": wait | preemptible, "from"?, "until"?, "thresholds"?}]`, a term on the scenario clock.
- `expect.budget_notices` (every threshold announced so far, `["term 80%"]`) and
  `expect.budget_used` (`{"name": GPU-hours}`).

Allot's additions for topology (issue 38, R23, docs/topology.md):
- `nodes[].labels`: `{"example.com/rack": "r1"}`, the node's labels (strings).
- `topology`: `{"pool": ["example.com/block", "example.com/rack"]}`, each pool's levels, widest
  first (`Snapshot.topology`).
- `submit[].topology`: `{"required": "rack"}` and/or `{"preferred": "block"}`, a level by its
  label key or short name; it must name a level of some pool.
- `expect.domains`: `{"project/name": {"rack": ["r1"]}}`, the distinct values of that label (key
  or short name) over the running job's nodes, sorted.

Allot's additions for reservations (issue 37, R22, docs/reservations.md;
scheduler_tools/reservations.py):
- `reservations`: bookings made before the first step, `[{"name", "project", "gpus", "from",
  "until", "pool"?, "whole_nodes"?, "cpu"?, "memory"?, "weeks"?}]` on the scenario clock; a step's
  `book` tries more through the core's refusal check (R22.1).
- a step's `cycles`: run exactly that many cycles at the step's clock (after its `at`), applying
  each plan, before its submissions: "within one cycle" is then checkable.
- `expect.booked` (names accepted so far) and `expect.refused` (`{"name": "text"}`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

from scheduler.apply import apply_plan
from scheduler.cycle import plan_cycle, settle
from scheduler.model import Department, Job, Node, Plan, Policy, Project, Snapshot, UserLimit
from scheduler.quantity import MIB, QuantityError, cpu_millis, format_memory, memory_bytes

from .budgets import Meter, ScenarioBudget, parse_budgets
from .reservations import Book, parse_booking

TOLERANCE = 0.001
JOB_FIELDS = {
    "name", "project", "gpus", "type", "pods", "priority", "user", "image", "expected_s",
    "cpu", "memory", "gpu_memory", "topology",
}  # fmt: skip


class ScenarioError(ValueError):
    """The file is not a valid scenario; the message says where and why."""


DEVICE_MEMORY = 32768 * MIB  # a device's memory when the scenario does not say


@dataclass
class Scenario:
    """A parsed scenario: the cluster, the policy and the raw steps."""

    name: str
    nodes: tuple[Node, ...]
    projects: tuple[Project, ...]
    departments: tuple[Department, ...]
    policy: Policy
    steps: list[dict]
    smallest_gpu_memory: int = DEVICE_MEMORY  # R3.4: a GPU-memory request's accounting fraction
    budgets: tuple[ScenarioBudget, ...] = ()  # issue 36, R20 (scheduler_tools/budgets.py)
    topology: dict[str, tuple[str, ...]] = field(default_factory=dict)  # issue 38, R23.1
    bookings: tuple[tuple[str, tuple], ...] = ()  # issue 37, R22 (scheduler_tools/reservations.py)


def _quantity(value, where: str, parse, allocatable: bool = False):
    """A Kubernetes quantity at `where`, or None when absent; ScenarioError naming the field."""
    if value is None:
        return None
    try:
        return parse(value, allocatable=allocatable)
    except QuantityError as exc:
        raise ScenarioError(f"{where}: {exc}") from None


@dataclass
class ReplayResult:
    """What a replay found: `failures` (one line each; empty = pass) and `report` (tables)."""

    failures: list[str] = field(default_factory=list)
    report: list[str] = field(default_factory=list)
    snapshot: Snapshot | None = None

    @property
    def ok(self) -> bool:
        """True when every expectation held."""
        return not self.failures


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ScenarioError(message)


def _number(value, where: str, minimum: float | None = 0, allow_none: bool = False):
    if value is None and allow_none:
        return None
    _require(
        isinstance(value, int | float) and not isinstance(value, bool),
        f"{where}: expected a number, got {value!r}",
    )
    _require(minimum is None or value >= minimum, f"{where}: must be >= {minimum}, got {value}")
    return value


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file; raise ScenarioError naming the problem."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{path}: not JSON: {exc.msg} at line {exc.lineno}") from None
    _require(isinstance(data, dict), f"{path}: the top level must be an object")
    return parse_scenario(data)


def parse_scenario(data: dict) -> Scenario:
    """Validate a scenario already loaded from JSON."""
    for key in ("nodes", "projects", "steps"):
        _require(isinstance(data.get(key), list), f"'{key}' must be a list")
    nodes = tuple(_node(n, i) for i, n in enumerate(data["nodes"]))
    departments = tuple(_dept(d, i) for i, d in enumerate(data.get("departments") or []))
    dept_names = {d.name for d in departments}
    projects = tuple(_project(p, i, dept_names) for i, p in enumerate(data["projects"]))
    policy = _policy(data.get("policy") or {})
    topology = _topology(data.get("topology", {}), {n.pool for n in nodes})
    names = {p.name for p in projects}
    for i, step in enumerate(data["steps"]):
        _require(isinstance(step, dict), f"steps[{i}] must be an object")
        for j, job in enumerate(step.get("submit", [])):
            where = f"steps[{i}].submit[{j}]"
            _require(isinstance(job, dict), f"{where} must be an object")
            _require(
                job.get("project") in names, f"{where}: unknown project {job.get('project')!r}"
            )
            _require(isinstance(job.get("name"), str) and job["name"], f"{where}: name missing")
            if job.get("gpu_memory") is None or job.get("gpus") is not None:
                _number(job.get("gpus"), f"{where}.gpus")
            for key, parse in (("cpu", cpu_millis), ("memory", memory_bytes)):
                _quantity(job.get(key), f"{where}.{key}", parse)
            gpu_memory = _quantity(job.get("gpu_memory"), f"{where}.gpu_memory", memory_bytes)
            _require(gpu_memory != 0, f"{where}.gpu_memory: must be more than 0")
            _require(
                job.get("type", "train") in ("train", "interactive"),
                f"{where}.type: must be train or interactive",
            )
            _number(job.get("expected_s"), f"{where}.expected_s", allow_none=True)
            _job_topology(job.get("topology", {}), f"{where}.topology", topology)
        _number(step.get("at", 0), f"steps[{i}].at")
        cycles = step.get("cycles", 0)
        _require(
            isinstance(cycles, int) and not isinstance(cycles, bool) and cycles >= 0,
            f"steps[{i}].cycles: expected a whole number >= 0, got {cycles!r}",
        )
        _bookings(step.get("book", []), f"steps[{i}].book", names)
        _failed_step(step.get("failed_devices", {}), f"steps[{i}].failed_devices", nodes)
    memories = [n.gpu_memory_bytes for n in nodes if n.gpus]
    budgets = parse_budgets(data.get("budgets"), names, dept_names, _fail)
    bookings = _bookings(data.get("reservations", []), "reservations", names)
    book = Book(nodes)
    for i, (name, occurrences) in enumerate(bookings):
        refused = book.add(name, occurrences)
        _require(refused is None, f"reservations[{i}].{refused}")
    return Scenario(
        str(data.get("name", "")), nodes, projects, departments, policy, data["steps"],
        min(memories, default=DEVICE_MEMORY), budgets, topology, bookings,
    )  # fmt: skip


def _bookings(specs, where: str, projects: set[str]) -> tuple[tuple[str, tuple], ...]:
    """`reservations` or a step's `book`: each booking's name and occurrences (R22.1)."""
    _require(isinstance(specs, list), f"{where}: must be a list")
    return tuple(
        (spec.get("name") if isinstance(spec, dict) else None,
         parse_booking(spec, f"{where}[{i}]", projects, _fail))
        for i, spec in enumerate(specs)
    )  # fmt: skip


def _topology(value, pools: set[str]) -> dict[str, tuple[str, ...]]:
    """`topology`: each pool's levels, label keys widest first (R23.1)."""
    _require(isinstance(value, dict), "topology: must be an object of pool: [label keys]")
    levels = {}
    for pool, keys in value.items():
        where = f"topology.{pool}"
        _require(pool in pools, f"{where}: no node is in pool {pool!r}")
        _require(
            isinstance(keys, list) and keys and all(isinstance(k, str) and k for k in keys),
            f"{where}: must be a non-empty list of label keys",
        )
        _require(len(set(keys)) == len(keys), f"{where}: a level is listed twice")
        levels[pool] = tuple(keys)
    return levels


def _job_topology(value, where: str, topology: dict[str, tuple[str, ...]]) -> None:
    """`submit[].topology`: {"required": level} and/or {"preferred": level} (R23.2, R23.3)."""
    _require(isinstance(value, dict), f"{where}: must be an object with required or preferred")
    unknown = set(value) - {"required", "preferred"}
    _require(not unknown, f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    known = {name for keys in topology.values() for k in keys for name in (k, k.split("/")[-1])}
    for kind, level in value.items():
        _require(isinstance(level, str) and level, f"{where}.{kind}: must be a level name")
        _require(level in known, f"{where}.{kind}: {level!r} is not a level of any pool")


def _fail(message: str) -> None:
    raise ScenarioError(message)


def _failed_step(value, where: str, nodes: tuple[Node, ...]) -> None:
    _require(isinstance(value, dict), f"{where}: must be an object of node: [devices]")
    known = {n.name: n for n in nodes}
    for name, devices in value.items():
        _require(name in known, f"{where}: unknown node {name!r}")
        _devices(devices, f"{where}.{name}", known[name].gpus)


def _devices(value, where: str, gpus: int) -> tuple[int, ...]:
    _require(isinstance(value, list), f"{where}: must be a list of device indexes")
    for d in value:
        _require(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d < gpus,
            f"{where}: {d!r} is not a device index of a node of {gpus} GPUs",
        )
    return tuple(sorted(set(value)))


def _node(n, i: int) -> Node:
    where = f"nodes[{i}]"
    _require(isinstance(n, dict) and isinstance(n.get("name"), str), f"{where}: name missing")
    gpus = _number(n.get("gpus"), f"{where}.gpus")
    _require(float(gpus).is_integer(), f"{where}.gpus: must be a whole number")
    gpu_memory = _quantity(n.get("gpu_memory"), f"{where}.gpu_memory", memory_bytes, True)
    return Node(
        name=n["name"],
        gpus=int(gpus),
        gpu_memory_bytes=gpu_memory or int(n.get("gpu_memory_mib", 32768)) * MIB,
        pool=n.get("pool", "default"),
        ready=bool(n.get("ready", True)),
        schedulable=bool(n.get("schedulable", True)),
        cpu_millis=_quantity(n.get("cpu"), f"{where}.cpu", cpu_millis, True),
        memory_bytes=_quantity(n.get("memory"), f"{where}.memory", memory_bytes, True),
        failed_devices=_devices(n.get("failed_devices", []), f"{where}.failed_devices", int(gpus)),
        labels=_labels(n.get("labels", {}), f"{where}.labels"),
    )


def _labels(value, where: str) -> tuple[tuple[str, str], ...]:
    """`nodes[].labels`: string keys and values (R23.1)."""
    _require(isinstance(value, dict), f"{where}: must be an object of label: value")
    for key, text in value.items():
        _require(isinstance(text, str), f"{where}.{key}: must be a string, got {text!r}")
    return tuple(sorted(value.items()))


def _queue_fields(p, where: str) -> dict:
    _require(isinstance(p, dict) and isinstance(p.get("name"), str), f"{where}: name missing")
    return {
        "name": p["name"],
        "quota": _number(p.get("quota"), f"{where}.quota", minimum=-1),
        "over_quota_weight": _number(p.get("over_quota_weight"), f"{where}.weight", 0, True),
        "limit": _number(p.get("limit"), f"{where}.limit", minimum=-1, allow_none=True),
        "priority": int(p.get("priority", 100)),
        "cpu_limit_millis": _quantity(p.get("cpu_limit"), f"{where}.cpu_limit", cpu_millis),
        "memory_limit_bytes": _quantity(
            p.get("memory_limit"), f"{where}.memory_limit", memory_bytes
        ),
    }


def _dept(d, i: int) -> Department:
    return Department(**_queue_fields(d, f"departments[{i}]"), order=i)


def _project(p, i: int, departments: set[str]) -> Project:
    where = f"projects[{i}]"
    fields = _queue_fields(p, where)
    dept = p.get("department")
    _require(dept is None or dept in departments, f"{where}: unknown department {dept!r}")
    return Project(
        **fields,
        node_pools=tuple(p.get("node_pools") or ()),
        department=dept,
        order=1000 + i,
        user_limits=_user_limits(p.get("user_limits", []), f"{where}.user_limits"),
        **_user_fair_share(p, where),
    )


def _user_fair_share(p: dict, where: str) -> dict:
    """`projects[].user_fair_share` and `user_weights` (R21.4): a switch, and weights above 0
    keyed by user."""
    on = p.get("user_fair_share", False)
    _require(isinstance(on, bool), f"{where}.user_fair_share: must be true or false")
    weights = p.get("user_weights", {})
    _require(isinstance(weights, dict), f"{where}.user_weights: must be an object of user: weight")
    pairs = []
    for user, weight in sorted(weights.items()):
        _require(
            isinstance(weight, int | float) and not isinstance(weight, bool) and weight > 0,
            f"{where}.user_weights.{user}: must be a number above 0",
        )
        pairs.append((user, float(weight)))
    return {"user_fair_share": on, "user_weights": tuple(pairs)}


def _user_limits(specs, where: str) -> tuple[UserLimit, ...]:
    """`projects[].user_limits`: per-user limits (R21.1-R21.3); an entry without `user` is the
    project default, one with `user` that user's override."""
    _require(isinstance(specs, list), f"{where}: must be a list")
    known = {"user", "max_gpus", "max_running", "max_interactive"}
    limits = []
    for i, spec in enumerate(specs):
        _require(isinstance(spec, dict), f"{where}[{i}]: must be an object")
        unknown = set(spec) - known
        _require(not unknown, f"{where}[{i}]: unknown field(s) {', '.join(sorted(unknown))}")
        counts = {}
        for key in ("max_running", "max_interactive"):
            value = spec.get(key)
            _require(
                value is None or (isinstance(value, int) and value >= 0),
                f"{where}[{i}].{key}: must be a whole number of at least 0",
            )
            counts[key] = value
        limits.append(
            UserLimit(
                user=str(spec.get("user", "")),
                max_gpus=_number(spec.get("max_gpus"), f"{where}[{i}].max_gpus", 0, True),
                **counts,
            )
        )
    return tuple(limits)


def _policy(data: dict) -> Policy:
    _require(isinstance(data, dict), "'policy' must be an object")
    known = {f.name for f in dataclasses.fields(Policy)}
    unknown = set(data) - known
    _require(not unknown, f"policy: unknown field(s) {', '.join(sorted(unknown))}")
    return Policy(**data)


def _job(spec: dict, order: int, smallest_gpu_memory: int = DEVICE_MEMORY) -> Job:
    gpu_memory = None if spec.get("gpu_memory") is None else memory_bytes(spec["gpu_memory"])
    gpus = spec.get("gpus")
    if gpu_memory is not None:  # R3.4: the share of the smallest device, for accounting
        gpus = round(gpu_memory / smallest_gpu_memory, 3)
    return Job(
        project=spec["project"],
        name=spec["name"],
        gpus=float(gpus),
        cpu_millis=0 if spec.get("cpu") is None else cpu_millis(spec["cpu"]),
        memory_bytes=0 if spec.get("memory") is None else memory_bytes(spec["memory"]),
        gpu_memory_bytes=gpu_memory,
        pods=int(spec.get("pods") or 1),
        type=spec.get("type") or "train",
        priority=spec.get("priority"),
        order=order,
        user=str(spec.get("user", "")),
        image=str(spec.get("image", "")),
        expected_s=None if spec.get("expected_s") is None else float(spec["expected_s"]),
        topology_required=(spec.get("topology") or {}).get("required"),
        topology_preferred=(spec.get("topology") or {}).get("preferred"),
    )


def replay(scenario: Scenario, verbose: bool = False) -> ReplayResult:
    """Run every step; check every expectation after the cluster settles."""
    result = ReplayResult()
    snapshot = Snapshot(
        nodes=scenario.nodes,
        projects=scenario.projects,
        departments=scenario.departments,
        topology=scenario.topology,
    )
    order = 0
    names = {p.name for p in scenario.projects}
    meter = Meter(scenario.budgets)
    book = Book(scenario.nodes)
    for name, occurrences in scenario.bookings:
        book.add(name, occurrences)
    plan = plan_cycle(snapshot, scenario.policy)
    for i, step in enumerate(scenario.steps):
        if "at" in step:
            if step["at"] < snapshot.now:
                result.failures.append(f"step {i}: the clock may not go back to {step['at']}")
            meter.advance(snapshot, float(step["at"]))  # R20.1, R20.5
            snapshot = dataclasses.replace(snapshot, now=float(step["at"]))
        for name, occurrences in _bookings(step.get("book", []), f"steps[{i}].book", names):
            book.add(name, occurrences)  # R22.1: accepted or refused with the reason
        snapshot = book.apply(meter.apply(snapshot))  # R20.2-R20.4, R22
        decided: list = []
        for _ in range(step.get("cycles", 0)):
            cycle = plan_cycle(snapshot, scenario.policy)
            decided += cycle.decisions
            snapshot = apply_plan(snapshot, cycle)
        if step.get("failed_devices"):
            snapshot = _fail_devices(snapshot, step["failed_devices"])
            snapshot, plans = _settle(snapshot, scenario.policy, result, i, verbose)
            decided += [d for p in plans for d in p.decisions]
        for spec in step.get("submit", []):
            order += 1
            job = _job(spec, order, scenario.smallest_gpu_memory)
            snapshot = meter.apply(dataclasses.replace(snapshot, jobs=(*snapshot.jobs, job)))
            snapshot, plans = _settle(snapshot, scenario.policy, result, i, verbose)
            decided += [d for p in plans for d in p.decisions]
            plan = plans[-1]
        for spec in step.get("delete", []):
            key = (spec.get("project"), spec.get("name"))
            snapshot = dataclasses.replace(
                snapshot, jobs=tuple(j for j in snapshot.jobs if j.key != key)
            )
            snapshot, plans = _settle(snapshot, scenario.policy, result, i, verbose)
            decided += [d for p in plans for d in p.decisions]
            plan = plans[-1]
        if "expect" in step:
            plan = plan_cycle(snapshot, scenario.policy)
            result.report += tables(scenario, snapshot, plan, f"after step {i}")
            result.failures += check(step["expect"], snapshot, plan, i)
            result.failures += check_resources(step["expect"], snapshot, decided, i)
            result.failures += meter.check(step["expect"], i)
            result.failures += book.check(step["expect"], i)
    result.snapshot = snapshot
    return result


def _fail_devices(snapshot: Snapshot, failed: dict[str, list[int]]) -> Snapshot:
    """The snapshot with the listed nodes' failed devices replaced (issue 26)."""
    nodes = tuple(
        dataclasses.replace(n, failed_devices=tuple(sorted(set(failed[n.name]))))
        if n.name in failed
        else n
        for n in snapshot.nodes
    )
    return dataclasses.replace(snapshot, nodes=nodes)


def check_resources(expect: dict, snapshot: Snapshot, decided: list, step: int) -> list[str]:
    """The expectations of issue 26: CPU and memory held per project, the devices a job holds,
    and text in the reason of a decision made during the step."""
    jobs = {f"{j.project}/{j.name}": j for j in snapshot.jobs}
    failures = []
    for project, want in expect.get("allocated_cpu", {}).items():
        got = sum(
            j.cpu_millis * j.pods for j in snapshot.jobs if j.project == project and j.running
        )
        if got != cpu_millis(want):
            failures.append(f"step {step}: CPU of {project} = {got}m, want {want}")
    for project, want in expect.get("allocated_memory", {}).items():
        got = sum(
            j.memory_bytes * j.pods for j in snapshot.jobs if j.project == project and j.running
        )
        if got != memory_bytes(want):
            failures.append(f"step {step}: memory of {project} = {format_memory(got)}, want {want}")
    for key, want in expect.get("devices", {}).items():
        job = jobs.get(key)
        got = sorted(d for p in job.placement for d in p.devices) if job else None
        if got != sorted(want):
            failures.append(f"step {step}: {key} holds devices {got}, want {sorted(want)}")
    failures += _check_domains(expect, snapshot, step)
    for key, text in expect.get("decision_contains", {}).items():
        reasons = [d.reason for d in decided if f"{d.job[0]}/{d.job[1]}" == key]
        if not any(text in r for r in reasons):
            failures.append(f"step {step}: decisions about {key} were {reasons}, want {text!r}")
    return failures


def _check_domains(expect: dict, snapshot: Snapshot, step: int) -> list[str]:
    """`expect.domains` (R23): the values of a label over a running job's nodes."""
    jobs = {f"{j.project}/{j.name}": j for j in snapshot.jobs}
    nodes = {n.name: dict(n.labels) for n in snapshot.nodes}
    failures = []
    for key, wanted in expect.get("domains", {}).items():
        job = jobs.get(key)
        for level, values in wanted.items():
            got = None
            if job is not None and job.running:
                got = sorted(
                    {
                        value
                        for pod in job.placement
                        for name, value in nodes.get(pod.node, {}).items()
                        if level in (name, name.split("/")[-1])
                    }
                )
            if got != sorted(values):
                failures.append(f"step {step}: {key} runs in {level} {got}, want {sorted(values)}")
    return failures


def _settle(snapshot, policy, result: ReplayResult, step: int, verbose: bool):
    snapshot, plans = settle(snapshot, policy, max_cycles=50)
    if not plans[-1].empty:
        result.failures.append(f"step {step}: did not settle within 50 cycles")
    if verbose:
        for plan in plans:
            for d in plan.decisions:
                result.report.append(f"   {d.kind:5} {d.job[0]}/{d.job[1]}: {d.reason}")
    return snapshot, plans


def tables(scenario: Scenario, snapshot: Snapshot, plan: Plan, title: str) -> list[str]:
    """Per project allocated/quota, fair share and pending; then every job's state and node."""
    lines = [
        f"== {title} ==",
        f"{'project':<14}{'alloc/quota':>12}{'fair share':>12}{'pending':>9}",
    ]
    for p in scenario.projects:
        alloc = sum(j.gpus * j.pods for j in snapshot.jobs if j.project == p.name and j.running)
        pending = sum(1 for j in snapshot.jobs if j.project == p.name and not j.running)
        lines.append(
            f"{p.name:<14}{f'{alloc:g}/{p.quota:g}':>12}"
            f"{plan.fair_shares.get(p.name, 0):>12g}{pending:>9}"
        )
    lines.append(f"{'job':<32}{'state':<9}node")
    for j in snapshot.jobs:
        state = "Running" if j.running else "Pending"
        where = ", ".join(dict.fromkeys(p.node for p in j.placement))
        if not j.running:
            where = plan.pending_reasons.get(j.key, "")
        lines.append(f"{j.project + '/' + j.name:<32}{state:<9}{where}")
    return lines


def check(expect: dict, snapshot: Snapshot, plan: Plan, step: int) -> list[str]:
    """One line per expectation that does not hold (FORMAT.md)."""
    jobs = {f"{j.project}/{j.name}": j for j in snapshot.jobs}
    failures = []
    for project, want in expect.get("allocated", {}).items():
        got = sum(j.gpus * j.pods for j in snapshot.jobs if j.project == project and j.running)
        if abs(got - want) > TOLERANCE:
            failures.append(f"step {step}: allocated {project} = {got:g}, want {want:g}")
    for project, want in expect.get("pending_count", {}).items():
        got = sum(1 for j in snapshot.jobs if j.project == project and not j.running)
        if got != want:
            failures.append(f"step {step}: pending {project} = {got}, want {want}")
    for key in expect.get("running", []):
        if key not in jobs or not jobs[key].running:
            failures.append(f"step {step}: {key} is {_state(jobs.get(key))}, want running")
    for key in expect.get("pending", []):
        if key not in jobs or jobs[key].running:
            failures.append(f"step {step}: {key} is {_state(jobs.get(key))}, want Pending")
    for group in expect.get("running_count_among", []):
        got = sum(1 for k in group["jobs"] if k in jobs and jobs[k].running)
        if got != group["count"]:
            failures.append(f"step {step}: {got} of {group['jobs']} running, want {group['count']}")
    for name, want in expect.get("fair_share", {}).items():
        got = plan.fair_shares.get(name)
        if got is None or abs(got - want) > TOLERANCE:
            failures.append(f"step {step}: fair share {name} = {got}, want {want:g}")
    for key, want in expect.get("on_node", {}).items():
        failures += _check_node(step, key, jobs.get(key), want)
    return (
        failures
        + _check_users(expect, snapshot, plan, step)
        + _check_backfill(expect, jobs, plan, step)
    )


def _check_users(expect: dict, snapshot: Snapshot, plan: Plan, step: int) -> list[str]:
    """`user_fair_share` and `user_allocated` ({"project/user": GPUs}, R21.4)."""
    failures = []
    for key, want in expect.get("user_fair_share", {}).items():
        project, _, user = key.partition("/")
        got = plan.user_fair_shares.get(project, {}).get(user)
        if got is None or abs(got - want) > TOLERANCE:
            failures.append(f"step {step}: user fair share {key} = {got}, want {want:g}")
    for key, want in expect.get("user_allocated", {}).items():
        project, _, user = key.partition("/")
        got = sum(
            j.gpus * j.pods
            for j in snapshot.jobs
            if j.project == project and j.user == user and j.running
        )
        if abs(got - want) > TOLERANCE:
            failures.append(f"step {step}: allocated to {key} = {got:g}, want {want:g}")
    return failures


def _check_backfill(expect: dict, jobs: dict[str, Job], plan: Plan, step: int) -> list[str]:
    """The backfill expectations: reservations, backfilled jobs, reason texts."""
    failures = []
    if "reservations" in expect:
        got = {f"{p}/{n}": at for (p, n), at in plan.reservations.items()}
        want = expect["reservations"]
        if set(got) != set(want) or any(abs(got[k] - want[k]) > TOLERANCE for k in want):
            failures.append(f"step {step}: reservations {got}, want {want}")
    for key in expect.get("backfilled", []):
        job = jobs.get(key)
        if job is None or not job.running or not job.backfilled:
            failures.append(f"step {step}: {key} is {_state(job)}, want running by backfill")
    for key, text in expect.get("reason_contains", {}).items():
        job = jobs.get(key)
        reason = plan.pending_reasons.get(job.key, "") if job is not None else ""
        if text not in reason:
            failures.append(f"step {step}: {key} waits because {reason!r}, want {text!r} in it")
    return failures


def _check_node(step: int, key: str, job: Job | None, want) -> list[str]:
    if job is None or not job.running:
        return [f"step {step}: {key} is {_state(job)}, want on node {want}"]
    got = sorted(p.node for p in job.placement)
    wanted = sorted(want) if isinstance(want, list) else [want] * len(got)
    if got != wanted:
        return [f"step {step}: {key} on {', '.join(got)}, want {', '.join(wanted)}"]
    return []


def _state(job: Job | None) -> str:
    if job is None:
        return "absent"
    return "Running" if job.running else "Pending"


def replay_file(path: str | Path, verbose: bool = False) -> ReplayResult:
    """Load and replay a scenario file (raises ScenarioError on an invalid file)."""
    return replay(load_scenario(path), verbose=verbose)


def print_result(scenario: Scenario, path, result: ReplayResult) -> int:
    """Print the tables, one FAIL line per failed expectation and PASS/FAIL; return 0 or 1."""
    print(f"# {scenario.name or path}")
    print("\n".join(result.report))
    for line in result.failures:
        print(f"FAIL {line}")
    print(("PASS " if result.ok else "FAIL ") + str(path))
    return 0 if result.ok else 1
