"""Scenario files (../shared/scenarios/FORMAT.md): loading, validation and replay.

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
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

from scheduler.cycle import plan_cycle, settle
from scheduler.model import Department, Job, Node, Plan, Policy, Project, Snapshot

TOLERANCE = 0.001
JOB_FIELDS = {"name", "project", "gpus", "type", "pods", "priority", "user", "image", "expected_s"}


class ScenarioError(ValueError):
    """The file is not a valid scenario; the message says where and why."""


@dataclass
class Scenario:
    """A parsed scenario: the cluster, the policy and the raw steps."""

    name: str
    nodes: tuple[Node, ...]
    projects: tuple[Project, ...]
    departments: tuple[Department, ...]
    policy: Policy
    steps: list[dict]


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
            _number(job.get("gpus"), f"{where}.gpus")
            _require(
                job.get("type", "train") in ("train", "interactive"),
                f"{where}.type: must be train or interactive",
            )
            _number(job.get("expected_s"), f"{where}.expected_s", allow_none=True)
        _number(step.get("at", 0), f"steps[{i}].at")
    return Scenario(str(data.get("name", "")), nodes, projects, departments, policy, data["steps"])


def _node(n, i: int) -> Node:
    where = f"nodes[{i}]"
    _require(isinstance(n, dict) and isinstance(n.get("name"), str), f"{where}: name missing")
    gpus = _number(n.get("gpus"), f"{where}.gpus")
    _require(float(gpus).is_integer(), f"{where}.gpus: must be a whole number")
    return Node(
        name=n["name"],
        gpus=int(gpus),
        gpu_memory_mib=int(n.get("gpu_memory_mib", 32768)),
        pool=n.get("pool", "default"),
        ready=bool(n.get("ready", True)),
        schedulable=bool(n.get("schedulable", True)),
    )


def _queue_fields(p, where: str) -> dict:
    _require(isinstance(p, dict) and isinstance(p.get("name"), str), f"{where}: name missing")
    return {
        "name": p["name"],
        "quota": _number(p.get("quota"), f"{where}.quota", minimum=-1),
        "over_quota_weight": _number(p.get("over_quota_weight"), f"{where}.weight", 0, True),
        "limit": _number(p.get("limit"), f"{where}.limit", minimum=-1, allow_none=True),
        "priority": int(p.get("priority", 100)),
    }


def _dept(d, i: int) -> Department:
    return Department(**_queue_fields(d, f"departments[{i}]"), order=i)


def _project(p, i: int, departments: set[str]) -> Project:
    where = f"projects[{i}]"
    fields = _queue_fields(p, where)
    dept = p.get("department")
    _require(dept is None or dept in departments, f"{where}: unknown department {dept!r}")
    return Project(
        **fields, node_pools=tuple(p.get("node_pools") or ()), department=dept, order=1000 + i
    )


def _policy(data: dict) -> Policy:
    _require(isinstance(data, dict), "'policy' must be an object")
    known = {f.name for f in dataclasses.fields(Policy)}
    unknown = set(data) - known
    _require(not unknown, f"policy: unknown field(s) {', '.join(sorted(unknown))}")
    return Policy(**data)


def _job(spec: dict, order: int) -> Job:
    return Job(
        project=spec["project"],
        name=spec["name"],
        gpus=float(spec["gpus"]),
        pods=int(spec.get("pods") or 1),
        type=spec.get("type") or "train",
        priority=spec.get("priority"),
        order=order,
        user=str(spec.get("user", "")),
        image=str(spec.get("image", "")),
        expected_s=None if spec.get("expected_s") is None else float(spec["expected_s"]),
    )


def replay(scenario: Scenario, verbose: bool = False) -> ReplayResult:
    """Run every step; check every expectation after the cluster settles."""
    result = ReplayResult()
    snapshot = Snapshot(
        nodes=scenario.nodes, projects=scenario.projects, departments=scenario.departments
    )
    order = 0
    plan = plan_cycle(snapshot, scenario.policy)
    for i, step in enumerate(scenario.steps):
        if "at" in step:
            if step["at"] < snapshot.now:
                result.failures.append(f"step {i}: the clock may not go back to {step['at']}")
            snapshot = dataclasses.replace(snapshot, now=float(step["at"]))
        for spec in step.get("submit", []):
            order += 1
            snapshot = dataclasses.replace(snapshot, jobs=(*snapshot.jobs, _job(spec, order)))
            snapshot, plans = _settle(snapshot, scenario.policy, result, i, verbose)
            plan = plans[-1]
        for spec in step.get("delete", []):
            key = (spec.get("project"), spec.get("name"))
            snapshot = dataclasses.replace(
                snapshot, jobs=tuple(j for j in snapshot.jobs if j.key != key)
            )
            snapshot, plans = _settle(snapshot, scenario.policy, result, i, verbose)
            plan = plans[-1]
        if "expect" in step:
            plan = plan_cycle(snapshot, scenario.policy)
            result.report += tables(scenario, snapshot, plan, f"after step {i}")
            result.failures += check(step["expect"], snapshot, plan, i)
    result.snapshot = snapshot
    return result


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
    return failures + _check_backfill(expect, jobs, plan, step)


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
