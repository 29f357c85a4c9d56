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
import os
import secrets
import sys
from pathlib import Path
from types import SimpleNamespace

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scheduler import Department, Job, Node, Plan, PodPlacement, Policy, Project, Snapshot
from scheduler.quantity import MIB, format_memory, memory_bytes
from scheduler_tools.scenario import (
    ReplayResult,
    Scenario,
    ScenarioError,
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


def read_state(portal: Portal, scenario: Scenario) -> tuple[Snapshot, Plan]:
    """The portal's jobs as a snapshot, and its stored fair shares and pending reasons as a plan."""
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
            reasons[job.key] = row.get("pending_reason") or ""
    rows = portal.all("/api/v1/projects/")
    shares = {row["name"]: row["fair_share"] for row in rows}
    users = {row["name"]: row["user_fair_shares"] for row in rows if row.get("user_fair_shares")}
    snapshot = Snapshot(nodes=scenario.nodes, projects=scenario.projects, jobs=tuple(jobs),
                        departments=scenario.departments,
                        topology=scenario.topology)  # fmt: skip
    return snapshot, Plan(decisions=(), fair_shares=shares, pending_reasons=reasons,
                          user_fair_shares=users)  # fmt: skip


def replay(
    portal: Portal, scenario: Scenario, verbose: bool = False, users: dict | None = None
) -> ReplayResult:
    """Every step through the API, settling after each change of devices, submission and
    deletion; the decisions reported while a step settles are checked by `decision_contains`.
    A job with a `user` is submitted by that user's client (`users`, from `prepare`)."""
    result = ReplayResult()
    for i, step in enumerate(scenario.steps):
        decided: list = []
        for node, devices in step.get("failed_devices", {}).items():
            body = {"failed_devices": sorted(set(devices))}
            portal.require("PATCH", f"/api/v1/nodes/{node}/", body)
        if step.get("failed_devices"):
            decided += _settle(portal, result, verbose)
        for spec in step.get("submit", []):
            body = {key: value for key, value in spec.items() if value is not None}
            submitter = (users or {}).get(body.pop("user", ""), portal)
            submitter.require("POST", "/api/v1/jobs/", body)
            decided += _settle(portal, result, verbose)
        for spec in step.get("delete", []):
            portal.require("DELETE", f"/api/v1/jobs/{spec['project']}/{spec['name']}/")
            decided += _settle(portal, result, verbose)
        if "expect" in step:
            snapshot, plan = read_state(portal, scenario)
            result.report += tables(scenario, snapshot, plan, f"after step {i}")
            result.failures += check(step["expect"], snapshot, plan, i)
            result.failures += check_resources(step["expect"], snapshot, decided, i)
    return result


def _settle(portal: Portal, result: ReplayResult, verbose: bool) -> list[SimpleNamespace]:
    """Settle; the decisions made, shaped as the core's (`job` a (project, name) pair)."""
    answer = portal.settle()
    if not answer.get("settled", True):
        result.failures.append(f"the portal did not settle within {answer.get('cycles')} cycles")
    decisions = [
        SimpleNamespace(kind=d["kind"], job=(d["project"], d["job"]), reason=d["reason"])
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
            users = prepare(portal, scenario, args.clean, args.reset)
            result = replay(portal, scenario, args.verbose, users)
        except (ScenarioError, PortalError) as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            return 2
        status = max(status, print_result(scenario, path, result))
    return status


if __name__ == "__main__":
    sys.exit(main())
