"""Replay a scenario file through a running portal's REST API; print the tables of
`scheduler_tools.replay`.

    python scripts/replay_scenario.py tests/fixtures/tr4858.json \
        --url http://127.0.0.1:8000 --token "$(python manage.py issue_token admin | tail -n 1)"

The scenario's nodes (with their CPU, memory, GPU memory, failed devices and labels), each node
pool's topology levels (`POST /api/v1/topology/`, issue 38), departments and
projects (with their CPU and memory limits, a project with its department) are created, or, when
they exist, updated to the scenario's values;
each job is submitted with `POST /api/v1/jobs/` (with its `cpu`, `memory`, `gpu_memory` and
`topology`) and
each deletion sent with `DELETE`, every one followed by `POST /api/v1/scheduler/cycles/` (settle),
as FORMAT.md prescribes; a step's `failed_devices` is a `PATCH` of the node, settled before the
step's submissions, as in the core (docs/scenarios.md). After each `expect` step the portal's jobs
and fair shares are read back and printed and checked by the same code as
`python -m scheduler_tools.replay` (issue 26's expectations too, with the decisions the portal
reported while the step settled), so the two outputs can be compared line by line.

A job with a `user` (and a user named in `user_weights`, for user fair share, R21.4) is
submitted as that user: the account is created (or its password reset) with the token's admin
rights, made a researcher of the job's project, and signs in for a token of its own, so the
portal records the job as that user's, as the core replay does. A project's `user_limits`
(R21.1-R21.3) replace the portal's per-user limits of that project
(`/api/v1/projects/<name>/user-limits/`).

`--clean` deletes the jobs already in the scenario's projects; `--reset` makes the portal hold the
scenario alone - every job, node, project and department deleted first - for a scratch or test
portal, where
other nodes and projects would change placement and fair shares, and where a node kept from an
earlier scenario would keep CPU, memory or failed devices this one does not set.

Exit 0 when every expectation holds, 1 when one fails, 2 when the file is not a scenario this
portal can replay or the portal cannot be reached (one line, no traceback).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import secrets
import sys
import urllib.parse
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scheduler import Department, Job, Node, Plan, PodPlacement, Policy, Project, Snapshot
from scheduler.quantity import MIB, format_memory, memory_bytes
from scheduler_tools.budgets import Meter
from scheduler_tools.reservations import WEEK_S, Book
from scheduler_tools.scenario import (
    ReplayResult,
    Scenario,
    ScenarioError,
    _bookings,
    check,
    check_resources,
    load_scenario,
    print_result,
    tables,
)

HOLDING = {"ContainerCreating", "Running"}


class PortalError(Exception):
    """The portal refused a request or could not be reached."""


class Portal:
    """A thin JSON client of the REST API, authenticated with a token."""

    def __init__(self, url: str, token: str):
        self.url = url.rstrip("/")
        self.token = token
        # One connection kept alive for all the calls: a replay sends thousands of requests,
        # and a connection each cost the portal (and, over TLS, the client) one set-up each.
        self.http = httpx.Client(
            headers={"Authorization": f"Token {token}", "Accept": "application/json"},
            timeout=300,
        )

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, object]:
        """(status, decoded JSON body or None); HTTP errors are returned, not raised."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        try:
            response = self.http.request(method, self.url + path, content=data, headers=headers)
        except httpx.HTTPError as exc:
            raise PortalError(f"cannot reach {self.url}: {exc}") from None
        return response.status_code, _decode(response.content)

    def require(self, method: str, path: str, body: dict | None = None, ok=(200, 201, 204)):
        """The body of a request that must succeed."""
        status, answer = self.call(method, path, body)
        if status not in ok:
            raise PortalError(f"{method} {path} -> {status} {answer}")
        return answer

    def all(self, path: str) -> list[dict]:
        """Every item of a paginated list."""
        page = self.require("GET", f"{path}{'&' if '?' in path else '?'}page_size=1000")
        items = list(page["results"])
        while page.get("next"):
            page = self.require("GET", page["next"][page["next"].index("/api/") :])
            items += page["results"]
        return items

    def settle(self) -> dict:
        """Run cycles until the portal's scheduler decides nothing."""
        return self.require("POST", "/api/v1/scheduler/cycles/", {})


def _decode(raw: bytes):
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode(errors="replace")[:300]


DAY_S = 24 * 3600
CLOCK = "/api/v1/scheduler/clock/"
PORTAL_MOMENT = re.compile(r"\b(\d{4}-\d{2}-\d{2} \d{2}:\d{2}) [A-Za-z][\w+-]*")
EPOCH_MOMENT = re.compile(r"\bt=(\d+(?:\.\d+)?)")
BUDGET_WORDS = re.compile(
    r" per (?:term \S+ to \S+|calendar month|rolling window) is spent "
    r"\(([\d.]+) GPU-hours, [\d.]+ core-hours used\)"
)


def moves_clock(scenario: Scenario) -> bool:
    """True when the file has budgets or reservations, or steps at times or of cycles."""
    return bool(scenario.budgets or scenario.bookings) or any(
        {"at", "cycles", "book"} & set(step) for step in scenario.steps
    )


class ScenarioClock:
    """The scenario's clock on the portal's replay clock (`ALLOT_REPLAY_CLOCK`, issue 36/37):
    scenario time t is the portal's `base` + t seconds. `base` is ahead of the portal's reading
    (the clock never moves backwards), at a midnight of the portal's zone or, when a budget's
    term ends on the scenario clock, so that its end falls on one (the portal's terms are whole
    days). The portal words times as its clock does (`t=<epoch seconds>` in the core's reasons,
    dates in a refusal) and a budget's reason names its window and core-hours, which the
    scenario has not: `words` turns the portal's words into the scenario's, so both replays
    print the same lines."""

    def __init__(self, portal: Portal, scenario: Scenario):
        status, answer = portal.call("GET", CLOCK)
        if status != 200:
            raise ScenarioError(
                f"the portal's clock is not settable (GET {CLOCK} -> {status}): this scenario "
                "moves its clock; replay it on a scratch portal with ALLOT_REPLAY_CLOCK=1"
            )
        self.portal = portal
        reading = datetime.fromisoformat(answer["now"].replace("Z", "+00:00"))
        self.zone = reading.tzinfo
        midnight = datetime.combine(reading.date() + timedelta(days=1), datetime.min.time(),
                                    tzinfo=self.zone)  # fmt: skip
        ends = sorted({b.until % DAY_S for b in scenario.budgets if b.until != math.inf})
        self.base = midnight + timedelta(seconds=(DAY_S - ends[0]) % DAY_S if ends else 0)
        for budget in scenario.budgets:
            for key, t in (("from", budget.start), ("until", budget.until)):
                if t != math.inf and (t > 0 or key == "until") and not self._midnight(t):
                    raise ScenarioError(
                        f"budgets: {budget.name}'s {key} ({t:g}) and the other terms' ends do "
                        "not all fall on midnights: the portal's terms are whole days"
                    )
        self.now = -1.0

    def _midnight(self, t: float) -> bool:
        moment = self.at(t)
        return moment == datetime.combine(moment.date(), datetime.min.time(), tzinfo=self.zone)

    def at(self, t: float) -> datetime:
        """Scenario time t on the portal's clock."""
        return self.base + timedelta(seconds=t)

    def move(self, t: float) -> None:
        """Set the portal's clock to scenario time t (before a step, as the core moves its own)."""
        if t != self.now:
            self.portal.require("POST", CLOCK, {"now": self.at(t).isoformat()})
            self.now = t

    def term(self, budget) -> dict:
        """The budget's window as the portal's term: the days from `from` to before `until`."""
        first = self.at(max(budget.start, 0)).date()
        last = (self.at(budget.until).date() - timedelta(days=1) if budget.until != math.inf
                else first + timedelta(days=3660))  # fmt: skip
        return {"window": "term", "term_start": first.isoformat(), "term_end": last.isoformat()}

    def words(self, text: str) -> str:
        """The portal's text in the scenario's words (see the class)."""
        text = BUDGET_WORDS.sub(r" is spent (\1 GPU-hours used)", text)
        text = EPOCH_MOMENT.sub(  # first: the dates below become t=, which must stay as they are
            lambda m: self._t(datetime.fromtimestamp(float(m[1]), self.zone)), text
        )
        return PORTAL_MOMENT.sub(
            lambda m: self._t(datetime.fromisoformat(m[1]).replace(tzinfo=self.zone)), text
        )

    def _t(self, moment: datetime) -> str:
        t = (moment - self.base).total_seconds()
        return f"t={t:.0f}" if float(t).is_integer() else f"t={t:.1f}"


class SameWords:
    """The words of a scenario that does not move its clock: the portal's as they are."""

    @staticmethod
    def words(text: str) -> str:
        return text


def replayable(scenario: Scenario) -> None:
    """Refuse what the REST API cannot express (a non-default policy)."""
    if scenario.policy != Policy():
        raise ScenarioError("the portal runs the default policy; this scenario sets 'policy'")


def upsert(portal: Portal, collection: str, body: dict) -> None:
    """Create the node, department or project, or bring an existing one to the scenario's
    values."""
    status, answer = portal.call("POST", f"/api/v1/{collection}/", body)
    if status == 201:
        return
    if (
        status in (400, 409)
        and portal.call("GET", f"/api/v1/{collection}/{body['name']}/")[0] == 200
    ):
        portal.require("PATCH", f"/api/v1/{collection}/{body['name']}/", body)
        return
    raise PortalError(f"POST /api/v1/{collection}/ {body['name']} -> {status} {answer}")


def node_body(node: Node) -> dict:
    """The node as the API takes it, CPU and memory exact (`m`, bytes). What the scenario leaves
    unset is left out, so a node the portal already has (from a Kubernetes inventory, say) keeps
    its allocatable CPU and memory and its failed devices; `--reset` starts from no nodes."""
    body = {"name": node.name, "gpus": node.gpus, "gpu_memory_mib": node.gpu_memory_bytes // MIB,
            "pool": node.pool, "ready": node.ready}  # fmt: skip
    optional = {
        "schedulable": None if node.schedulable else False,
        "cpu": _quantity(node.cpu_millis, "m"),
        "memory": None if node.memory_bytes is None else format_memory(node.memory_bytes),
        "failed_devices": list(node.failed_devices) or None,
        "labels": dict(node.labels) or None,
    }
    return body | {key: value for key, value in optional.items() if value is not None}


def queue_body(queue: Project | Department) -> dict:
    """A department or project as the API takes it: GPU quota, weight and limit, and its CPU and
    memory limits exact (`m`, bytes) when it has them."""
    body = {"name": queue.name, "quota": queue.quota,
            "over_quota_weight": queue.over_quota_weight, "limit": queue.limit}  # fmt: skip
    limits = {
        "cpu_limit": _quantity(queue.cpu_limit_millis, "m"),
        "memory_limit": None
        if queue.memory_limit_bytes is None
        else format_memory(queue.memory_limit_bytes),
    }
    return body | {key: value for key, value in limits.items() if value is not None}


def project_body(project: Project) -> dict:
    """The project as the API takes it: its queue's fields, pools and department (or none), and
    its user fair share switch and weights (R21.4)."""
    return queue_body(project) | {"node_pools": list(project.node_pools),
                                  "department": project.department,
                                  "user_fair_share": project.user_fair_share,
                                  "user_weights": dict(project.user_weights)}  # fmt: skip


def scenario_users(scenario: Scenario) -> dict[str, set[str]]:
    """Each user the scenario names (a job's `user`, a weight's) and the projects they submit
    to or are weighted in."""
    users: dict[str, set[str]] = {}
    for project in scenario.projects:
        for user, _ in project.user_weights:
            users.setdefault(user, set()).add(project.name)
        for limit in project.user_limits:
            if limit.user:
                users.setdefault(limit.user, set()).add(project.name)
    for budget in scenario.budgets:
        if budget.user:
            users.setdefault(budget.user, set()).add(budget.project)
    for step in scenario.steps:
        for spec in step.get("submit", []):
            if spec.get("user"):
                users.setdefault(spec["user"], set()).add(spec["project"])
    return users


SIGNED_IN: dict[tuple[str, str], Portal] = {}  # (portal URL, user) -> client, this process


def prepare_users(portal: Portal, users: dict[str, set[str]], reset: bool) -> dict[str, Portal]:
    """A client signed in as each user (its own token): an account made with a fresh password
    (the API never shows nor sets another's), kept for the next file of this process. A user
    who already exists otherwise is deleted and made again with `--reset` (a scratch portal;
    their jobs were deleted with the rest), else refused: this replay cannot sign in as them."""
    clients = {}
    for user in sorted(users):
        known = SIGNED_IN.get((portal.url, user))
        if known is not None and known.call("GET", "/api/v1/auth/tokens/")[0] == 200:
            clients[user] = known
            continue
        password = secrets.token_urlsafe(24)
        body = {"username": user, "password": password}
        status, answer = portal.call("POST", "/api/v1/users/", body)
        if status == 409 and reset:
            portal.require("DELETE", f"/api/v1/users/{user}/")
            status, answer = portal.call("POST", "/api/v1/users/", body)
        if status == 409:
            raise PortalError(
                f"user {user} already exists and this replay cannot sign in as them: replay on "
                "a scratch portal with --reset"
            )
        if status != 201:
            raise PortalError(f"POST /api/v1/users/ {user} -> {status} {answer}")
        signed = portal.require("POST", "/api/v1/auth/token/", {**body, "name": "replay"})
        clients[user] = SIGNED_IN[(portal.url, user)] = Portal(portal.url, signed["token"])
    return clients


def add_members(portal: Portal, users: dict[str, set[str]]) -> None:
    """Each user a researcher of the projects they submit to (kept if already a member)."""
    for user, projects in sorted(users.items()):
        for project in sorted(projects):
            body = {"username": user, "role": "researcher"}
            status, answer = portal.call("POST", f"/api/v1/projects/{project}/members/", body)
            if status not in (200, 201, 409):
                raise PortalError(f"member {user} of {project} -> {status} {answer}")


def set_user_limits(portal: Portal, project: Project) -> None:
    """The project's per-user limits (R21.1-R21.3) as the scenario says: the portal's own are
    deleted, then the scenario's default and overrides made."""
    path = f"/api/v1/projects/{project.name}/user-limits/"
    for row in portal.all(path):
        portal.require("DELETE", f"{path}{row['id']}/")
    for limit in project.user_limits:
        portal.require("POST", path, {
            "user": limit.user or None, "max_gpus": limit.max_gpus,
            "max_running": limit.max_running, "max_interactive": limit.max_interactive,
        })  # fmt: skip


def _quantity(value: int | None, unit: str) -> str | None:
    return None if value is None else f"{value}{unit}"


def prepare(
    portal: Portal, scenario: Scenario, clean: bool, reset: bool = False
) -> dict[str, Portal]:
    """Nodes, departments and projects as the scenario says; the scenario's projects without
    jobs. With `reset`, nothing else: every job, node, project and department is deleted first.
    Returns a client signed in as each user the scenario names (`prepare_users`)."""
    if reset:
        _reset(portal)
    users = scenario_users(scenario)
    clients = prepare_users(portal, users, reset)
    for node in scenario.nodes:
        upsert(portal, "nodes", node_body(node))
    for department in scenario.departments:
        upsert(portal, "departments", queue_body(department))
    for project in scenario.projects:
        upsert(portal, "projects", project_body(project))
    for pool, levels in sorted(scenario.topology.items()):
        portal.require("POST", "/api/v1/topology/", {"pool": pool, "levels": list(levels)})
    add_members(portal, users)
    for project in scenario.projects:
        set_user_limits(portal, project)
    names = {project.name for project in scenario.projects}
    leftovers = [job for job in portal.all("/api/v1/jobs/") if job["project"] in names]
    if leftovers and not clean:
        raise PortalError(
            f"the scenario's projects already have {len(leftovers)} jobs "
            "(pass --clean to delete them first)"
        )
    for job in leftovers:
        portal.require("DELETE", f"/api/v1/jobs/{job['project']}/{job['name']}/")
    portal.settle()
    return clients


def _reset(portal: Portal) -> None:
    """Every job, node, project, department and pool topology deleted (projects before their
    departments): the scenario then makes the whole cluster, and a pool keeps no levels an
    earlier scenario gave it (R23.1)."""
    for job in portal.all("/api/v1/jobs/"):
        portal.require("DELETE", f"/api/v1/jobs/{job['project']}/{job['name']}/")
    portal.settle()
    for row in portal.all("/api/v1/topology/"):
        portal.require("DELETE", f"/api/v1/topology/{row['pool']}/")
    for collection in ("nodes", "projects", "departments"):
        for row in portal.all(f"/api/v1/{collection}/"):
            portal.require("DELETE", f"/api/v1/{collection}/{row['name']}/")


def read_state(portal: Portal, scenario: Scenario, words=SameWords.words) -> tuple[Snapshot, Plan]:
    """The portal's jobs as a snapshot, and its stored fair shares and pending reasons (in the
    scenario's words, `ScenarioClock.words`) as a plan."""
    names = {project.name for project in scenario.projects}
    jobs, reasons = [], {}
    for order, row in enumerate(portal.all("/api/v1/jobs/")):
        if row["project"] not in names or row["status"] not in HOLDING | {"Pending"}:
            continue
        placement = tuple(
            PodPlacement(pod["node"], tuple(pod.get("devices", ())), pod.get("share", 1.0))
            for pod in row["placement"]
        ) if row["status"] in HOLDING else ()  # fmt: skip
        job = Job(row["project"], row["name"], float(row["gpus"]), row["pods"], row["type"],
                  row.get("priority"), order=order, placement=placement,
                  cpu_millis=row["cpu_millis"] or 0,
                  memory_bytes=memory_bytes(row["memory"]) if row.get("memory") else 0,
                  gpu_memory_bytes=memory_bytes(row["gpu_memory"]) if row.get("gpu_memory")
                  else None, user=row.get("user") or "")  # fmt: skip
        jobs.append(job)
        if not placement:
            reasons[job.key] = words(row.get("pending_reason") or "")
    rows = portal.all("/api/v1/projects/")
    shares = {row["name"]: row["fair_share"] for row in rows}
    users = {row["name"]: row["user_fair_shares"] for row in rows if row.get("user_fair_shares")}
    snapshot = Snapshot(nodes=scenario.nodes, projects=scenario.projects, jobs=tuple(jobs),
                        departments=scenario.departments,
                        topology=scenario.topology)  # fmt: skip
    return snapshot, Plan(decisions=(), fair_shares=shares, pending_reasons=reasons,
                          user_fair_shares=users)  # fmt: skip


def create_budgets(portal: Portal, scenario: Scenario, clock: ScenarioClock) -> None:
    """The scenario's budgets (R20) through `/api/v1/budgets/`, each window the portal's term
    of the same days (`ScenarioClock.term`)."""
    for budget in scenario.budgets:
        scope = ({"department": budget.department} if budget.department is not None
                 else {"project": budget.project, "user": budget.user})  # fmt: skip
        portal.require("POST", "/api/v1/budgets/", {
            "name": budget.name, "gpu_hours": budget.gpu_hours, "kind": budget.kind,
            "over": budget.over, "thresholds": list(budget.thresholds), **scope,
            **clock.term(budget),
        })  # fmt: skip


def booking_body(name: str, occurrences: tuple, clock: ScenarioClock) -> dict:
    """A booking's occurrences (`scheduler_tools.reservations`) as the reservations resource
    takes them: the first slot, and weekly until the last one's end when there are more."""
    first = occurrences[0]
    body = {"name": name, "project": first.project, "gpus": first.gpus,
            "pool": first.pool or "", "whole_nodes": first.whole_nodes,
            "start": clock.at(first.start).isoformat(),
            "end": clock.at(first.end).isoformat()}  # fmt: skip
    if first.cpu_millis is not None:
        body["cpu"] = f"{first.cpu_millis}m"
    if first.memory_bytes is not None:
        body["memory"] = str(first.memory_bytes)
    if len(occurrences) > 1:
        assert occurrences[1].start - first.start == WEEK_S
        body |= {"weekly": True, "repeat_until": clock.at(occurrences[-1].end).isoformat()}
    return body


def book(portal: Portal, booked: Book, name: str, occurrences: tuple, clock: ScenarioClock):
    """Book through `/api/v1/reservations/`: accepted, or refused as `field: reason` (R22.1)."""
    status, answer = portal.call("POST", "/api/v1/reservations/",
                                 booking_body(name, occurrences, clock))  # fmt: skip
    if status == 201:
        booked.names.append(name)
        return
    if status != 400 or not isinstance(answer, dict) or not answer:
        raise PortalError(f"POST /api/v1/reservations/ {name} -> {status} {answer}")
    field, reasons = next(iter(answer.items()))
    reason = reasons[0] if isinstance(reasons, list) else str(reasons)
    booked.refused[name] = f"{field}: {clock.words(reason)}"


def read_budgets(portal: Portal, scenario: Scenario, clock: ScenarioClock) -> Meter:
    """What the portal's budgets of the scenario used and announced, as the core's meter
    holds them (`budget_used`, `budget_notices`). A budget whose term has ended has no window
    open, so the portal shows no use; what its term counted is then the accounting's allocated
    GPU-hours of its scope over the term (the same runs and arithmetic, R20.1)."""
    by_name = {budget.name: budget for budget in scenario.budgets}
    meter, announced = Meter(scenario.budgets), []
    for row in portal.all("/api/v1/budgets/"):
        budget = by_name.get(row["name"])
        if budget is None:
            continue
        used = row["usage"]["used_gpu_hours"]
        if row["usage"]["window_start"] is None and budget.department is None:
            used = term_hours(portal, budget, clock)
        meter.used_s[row["name"]] = used * 3600
        announced += [(n["sent_at"], n["threshold"], row["name"]) for n in row["notices"]]
    meter.notices = [f"{name} {threshold}%" for _, threshold, name in sorted(announced)]
    return meter


def term_hours(portal: Portal, budget, clock: ScenarioClock) -> float:
    """The GPU-hours `/api/v1/accounting/` allocated to the budget's project (and user) over
    its term, at most the clock's reading."""
    term = clock.term(budget)
    since = datetime.fromisoformat(term["term_start"]).replace(tzinfo=clock.zone)
    until = min(datetime.fromisoformat(term["term_end"]).replace(tzinfo=clock.zone)
                + timedelta(days=1), clock.at(clock.now))  # fmt: skip
    query = {"group_by": "project", "project": budget.project,
             "since": since.isoformat(), "until": until.isoformat()}  # fmt: skip
    if budget.user:
        query["user"] = budget.user
    report = portal.require("GET", "/api/v1/accounting/?" + urllib.parse.urlencode(query))
    return sum(row["allocated_gpu_hours"] for row in report["totals"])


def replay(
    portal: Portal, scenario: Scenario, verbose: bool = False, users: dict | None = None,
    clock: ScenarioClock | None = None,
) -> ReplayResult:  # fmt: skip
    """Every step through the API, settling after each change of devices, submission and
    deletion; the decisions reported while a step settles are checked by `decision_contains`.
    A job with a `user` is submitted by that user's client (`users`, from `prepare`).

    With a `clock` (a file that moves its clock, budgets or reservations: issues 36 and 37),
    the portal's clock is set to each step's `at` before the step and the portal settles, as the
    cycle a live portal runs every few seconds would (it counts budgets and announces their
    thresholds there); a step's `cycles` is that settling, and only the decisions of its first
    `cycles` cycles count for it; the budgets and the file's bookings are made first, a step's
    `book` tried in turn, and `budget_*`, `booked` and `refused` checked as the core does."""
    result = ReplayResult()
    names = {project.name for project in scenario.projects}
    words = (clock or SameWords).words
    booked = Book(scenario.nodes)
    if clock is not None:
        clock.move(0)
        create_budgets(portal, scenario, clock)
        for name, occurrences in scenario.bookings:
            book(portal, booked, name, occurrences, clock)
        if booked.refused:
            raise PortalError(f"the portal refused the file's bookings: {booked.refused}")
    for i, step in enumerate(scenario.steps):
        decided: list = []
        if clock is not None:
            clock.move(float(step.get("at", clock.now)))
            for name, occurrences in _bookings(step.get("book", []), f"steps[{i}].book", names):
                book(portal, booked, name, occurrences, clock)
            if {"at", "cycles", "book"} & set(step):
                within = step.get("cycles")
                decided += [d for d in _settle(portal, result, verbose, words)
                            if within is None or d.cycle <= within]  # fmt: skip
        for node, devices in step.get("failed_devices", {}).items():
            body = {"failed_devices": sorted(set(devices))}
            portal.require("PATCH", f"/api/v1/nodes/{node}/", body)
        if step.get("failed_devices"):
            decided += _settle(portal, result, verbose, words)
        for spec in step.get("submit", []):
            body = {key: value for key, value in spec.items() if value is not None}
            if "expected_s" in body:  # the core's prediction; the portal's submitter says it
                body["estimate_s"] = max(1, round(body.pop("expected_s")))
            submitter = (users or {}).get(body.pop("user", ""), portal)
            submitter.require("POST", "/api/v1/jobs/", body)
            decided += _settle(portal, result, verbose, words)
        for spec in step.get("delete", []):
            portal.require("DELETE", f"/api/v1/jobs/{spec['project']}/{spec['name']}/")
            decided += _settle(portal, result, verbose, words)
        if "expect" in step:
            snapshot, plan = read_state(portal, scenario, words)
            result.report += tables(scenario, snapshot, plan, f"after step {i}")
            result.failures += check(step["expect"], snapshot, plan, i)
            result.failures += check_resources(step["expect"], snapshot, decided, i)
            if clock is not None:
                result.failures += read_budgets(portal, scenario, clock).check(step["expect"], i)
                result.failures += booked.check(step["expect"], i)
    return result


def _settle(
    portal: Portal, result: ReplayResult, verbose: bool, words=SameWords.words
) -> list[SimpleNamespace]:
    """Settle; the decisions made, shaped as the core's (`job` a (project, name) pair), their
    reasons in the scenario's words."""
    answer = portal.settle()
    if not answer.get("settled", True):
        result.failures.append(f"the portal did not settle within {answer.get('cycles')} cycles")
    decisions = [
        SimpleNamespace(
            kind=d["kind"],
            job=(d["project"], d["job"]),
            reason=words(d["reason"]),
            cycle=d.get("cycle", 1),
        )
        for d in answer.get("decisions", [])
    ]
    if verbose:
        for d in decisions:
            result.report.append(f"   {d.kind:5} {d.job[0]}/{d.job[1]}: {d.reason}")
    return decisions


def main(argv: list[str] | None = None) -> int:
    """Replay each file against the portal; exit 0 (all pass), 1 (a failure) or 2 (unusable)."""
    parser = argparse.ArgumentParser(prog="replay_scenario.py", description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.add_argument("--url", default=os.environ.get("ALLOT_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("ALLOT_TOKEN"),
                        help="an API token (default: $ALLOT_TOKEN)")  # fmt: skip
    parser.add_argument("--clean", action="store_true",
                        help="delete jobs already in the scenario's projects")  # fmt: skip
    parser.add_argument("--reset", action="store_true",
                        help="delete every job, node and project first (a scratch portal: the "
                        "scenario becomes the whole cluster)")  # fmt: skip
    parser.add_argument("-v", "--verbose", action="store_true", help="print every decision")
    args = parser.parse_args(argv)
    if not args.token:
        print("replay_scenario.py: --token (or ALLOT_TOKEN) is required", file=sys.stderr)
        return 2
    portal, status = Portal(args.url, args.token), 0
    for path in args.files:
        try:
            scenario = load_scenario(path)
            replayable(scenario)
            clock = ScenarioClock(portal, scenario) if moves_clock(scenario) else None
            users = prepare(portal, scenario, args.clean, args.reset)
            result = replay(portal, scenario, args.verbose, users, clock)
        except (ScenarioError, PortalError) as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            return 2
        status = max(status, print_result(scenario, path, result))
    return status


if __name__ == "__main__":
    sys.exit(main())
