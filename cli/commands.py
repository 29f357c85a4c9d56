"""The `allot` commands, spelled as Run:AI v1's `runai` so TR-4858's command lines work."""

from __future__ import annotations

import json
import socket
import sys
import time
from datetime import UTC, datetime

import click
import yaml
from rich.console import Console
from rich.table import Table

from . import __version__, config
from .client import Api, CliError
from .limits import register as register_limits
from .reservations import register as register_reservations
from .tables import gpu_hours, gpus, show
from .usage import budgets_table, heading, usage_table
from .whatif import register as register_what_if

out = Console(highlight=False, soft_wrap=True)


def api() -> Api:
    """A client for the configured portal, or a CliError saying how to configure one."""
    settings = config.current()
    if not settings.url:
        raise CliError("no portal configured: run `allot login URL --token TOKEN` or set ALLOT_URL")
    return Api(settings.url, settings.token)


def project_of(given: str | None) -> str:
    """-p, else the project set with `allot project set`, else a CliError."""
    project = given or config.current().project
    if not project:
        raise CliError("no project: pass -p PROJECT or run `allot project set PROJECT`")
    return project


def span(seconds: float) -> str:
    """'45s', '12m', '3h20m', '2d4h'."""
    total = max(0, round(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m" if minutes else f"{secs}s"


def eta_of(job: dict) -> str:
    """When a pending job is expected to start, in the portal's words (`expected_start`: a
    time, a lower bound, or why it cannot start as submitted); from `eta` for older portals."""
    if job.get("expected_start"):
        return job["expected_start"]
    if not job.get("eta"):
        return "not known yet"
    at = datetime.fromisoformat(job["eta"].replace("Z", "+00:00")).astimezone(UTC)
    left = (at - datetime.now(UTC)).total_seconds()
    when = "within the next cycles" if left <= 60 else f"in {span(left)}"
    return f"{at:%Y-%m-%d %H:%M} UTC ({when})"


def age(stamp: str | None) -> str:
    """'3m', '2h', '5d' since an ISO timestamp."""
    if not stamp:
        return "-"
    seconds = (datetime.now(UTC) - datetime.fromisoformat(stamp)).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{max(int(seconds), 0)}s"


def urls_of(job: dict) -> str:
    """A job's service URLs, comma-separated ('-' when it exposes none)."""
    return ", ".join(u.get("url", "") for u in job.get("urls") or []) or "-"


class Group(click.Group):
    """Prints CliError plainly on stderr with exit status 1 — never a traceback."""

    def invoke(self, ctx):
        """Run the command; a CliError becomes 'Error: ...' on stderr and exit status 1."""
        try:
            return super().invoke(ctx)
        except CliError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(1)


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
def cli():
    """Allot: submit and follow GPU jobs on a shared cluster (Run:AI-style commands)."""


@cli.command()
@click.argument("url")
@click.option("--token", help="an API token (from your user page or `manage.py issue_token`)")
@click.option("-u", "--username", help="sign in with your username and password instead")
@click.option("--password-stdin", is_flag=True, help="read the password from standard input")
def login(url, token, username, password_stdin):
    """Store the portal URL and your API token (in a file only you can read).

    With --token the token is checked and stored; otherwise your username and password get a
    new token named "allot CLI on <this host>" (the password itself is never stored). Your
    tokens are listed, and revoked, on your page (/me/); a password change revokes them all."""
    if token and (username or password_stdin):
        raise click.UsageError("give either --token or a username and password, not both")
    who = ""
    if not token:
        username = username or click.prompt("Username")
        if password_stdin:
            password = sys.stdin.readline().rstrip("\r\n")
        else:
            password = click.prompt("Password", hide_input=True)
        answer = _sign_in(url, username, password)
        token, who = answer["token"], f" as {answer['username']}"
    visible = Api(url, token).call("GET", "projects/", params={"page_size": 1})
    path = config.write({"url": url.rstrip("/"), "token": token})
    click.echo(f"Logged in to {url}{who} ({visible['count']} project(s) visible); "
               f"token saved to {path}")  # fmt: skip


@cli.command()
def logout():
    """Revoke the API token in use (the portal refuses it from then on) and forget the stored one.

    Other tokens of yours (other machines, scripts) stay valid: list and revoke them on /me/."""
    settings = config.current()
    if not (settings.url and settings.token):
        raise CliError("not logged in: nothing to revoke")
    response = Api(settings.url, settings.token).send("DELETE", "auth/token/")
    if response.status_code != 401:  # revoked already or expired: nothing to keep either
        Api(settings.url, None).answer(response)  # any other refusal, said plainly
    config.forget("token")
    if response.status_code == 401:
        click.echo("The token was not valid any more; forgotten.")
    else:
        click.echo(f"Logged out of {settings.url}: the token is revoked and forgotten.")


def _sign_in(url: str, username: str, password: str) -> dict:
    """A new token for `username` (POST /auth/token/); a refused pair (the portal's 401) is said
    as the portal says it, without the "not logged in" hint meant for a refused token."""
    api = Api(url, None)
    body = {"username": username, "password": password, "name": _token_name()}
    response = api.send("POST", "auth/token/", json=body)
    if response.status_code == 401:
        try:
            reason = response.json().get("detail")
        except (ValueError, AttributeError):
            reason = None
        raise CliError(reason or "wrong username or password")
    return api.answer(response)


def _token_name() -> str:
    """What `allot login` calls the token it gets, to tell it apart on /me/."""
    return f"allot CLI on {socket.gethostname() or 'an unnamed host'}"[:100]


@cli.group()
def project():
    """Set the default project or list the projects you may see."""


@project.command("set")
@click.argument("name")
def project_set(name):
    """Make NAME the default project of later commands."""
    api().call("GET", f"projects/{name}/")
    config.write({"project": name})
    click.echo(f"Project {name} has been set as the default project")


@project.command("list")
@click.option("--json", "as_json", is_flag=True, help="print JSON")
def project_list(as_json):
    """Projects with quota, allocated GPUs, fair share and pending jobs."""
    projects = api().all("projects/")
    if as_json:
        click.echo(json.dumps(projects, indent=2))
        return
    default = config.current().project
    table = Table("PROJECT", "QUOTA", "ALLOCATED", "FAIR-SHARE", "RUNNING", "PENDING", box=None,
                  pad_edge=False)  # fmt: skip
    for p in projects:
        mark = " (default)" if p["name"] == default else ""
        table.add_row(
            p["name"] + mark,
            f"{gpus(p['quota'])}",
            f"{gpus(p['allocated_gpus'])}",
            f"{gpus(p['fair_share'])}",
            str(p["running_jobs"]),
            str(p["pending_jobs"]),
        )
    show(table, out)


def parse_env(values) -> dict:
    """-e KEY=VALUE options as a dict (a usage error, exit 2, for an item without '=')."""
    env = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="-e")
        env[key] = value
    return env


def parse_pvc(values) -> list:
    """--pvc CLAIM:PATH[:ro] options as the API's volumes (a usage error for a bad item)."""
    volumes = []
    for item in values:
        claim, sep, path = item.partition(":")
        if not sep or not claim or not path:
            raise click.BadParameter(f"{item!r} is not CLAIM:PATH", param_hint="--pvc")
        read_only = path.endswith(":ro")
        volumes.append(
            {"pvc": claim, "mount_path": path.removesuffix(":ro"), "read_only": read_only}
        )
    return volumes


class Duration(click.ParamType):
    """A duration as seconds: a whole number with an optional unit s, m, h or d (90m, 2h)."""

    name = "duration"
    UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}

    def convert(self, value, param, ctx) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().lower()
        number, unit = text.rstrip("smhd"), text[len(text.rstrip("smhd")) :]
        if not number.isdigit() or unit not in self.UNITS or int(number) == 0:
            self.fail(f"{value!r} is not a duration such as 3600, 90m, 2h or 1d", param, ctx)
        return int(number) * self.UNITS[unit]


@cli.command()
@click.argument("name", required=False)
@click.option(
    "--from", "from_file", type=click.File("r"), default=None,
    help="submit every job in this YAML or JSON file (a list of jobs, or {jobs: [...]}) at once",
)  # fmt: skip
@click.option("-p", "--project", help="the project (default: `allot project set`)")
@click.option("-i", "--image", default="", help="container image")
@click.option(
    "-g",
    "--gpu",
    "gpus",
    type=float,
    default=None,
    help="GPUs per pod: a fraction below 1, a whole number, or 0 with --cpu/--memory (a "
    "CPU-only job)  [default: 1, none with --gpu-memory]",
)
@click.option(
    "--gpu-memory",
    default=None,
    help="a fraction of one GPU by its memory, e.g. 20Gi (instead of --gpu)",
)
@click.option(
    "--cpu", default=None, help="CPU cores per pod, e.g. 2 or 500m (default: the project's)"
)
@click.option("--memory", default=None, help="memory per pod, e.g. 16Gi or 512Mi")
@click.option("--cpu-limit", default=None, help="CPU limit per pod, e.g. 4")
@click.option("--memory-limit", default=None, help="memory limit per pod, e.g. 32Gi")
@click.option("--pods", type=int, default=1, show_default=True, help="pods started together")
@click.option(
    "--topology-required", default=None, metavar="LEVEL",
    help="run every pod inside one domain of this topology level, e.g. rack, or wait",
)  # fmt: skip
@click.option(
    "--topology-preferred", default=None, metavar="LEVEL",
    help="pack the pods into one domain of this level if they fit, else the next wider one",
)  # fmt: skip
@click.option(
    "--interactive", is_flag=True, help="an interactive (build) job: in quota, never preempted"
)
@click.option("--command", "command", multiple=True, help="the command (repeat for words)")
@click.option("--args", "args", multiple=True, help="an argument (repeat)")
@click.option("-e", "--environment", multiple=True, help="KEY=VALUE (repeat)")
@click.option("--port", "ports", type=int, multiple=True, help="a port to expose (repeat)")
@click.option(
    "--service-type",
    default="",
    type=click.Choice(["", "portforward", "nodeport", "loadbalancer", "ingress"]),
)
@click.option("--pvc", multiple=True, help="CLAIM:PATH[:ro] (repeat)")
@click.option("--priority", type=int, default=None, help="priority among your project's jobs")
@click.option(
    "--estimate",
    type=Duration(),
    default=None,
    help="your estimate of the run time, e.g. 90m, 2h, 1d (caps the predicted run time)",
)
@click.option("--wait", is_flag=True, help="wait (with a spinner) until it runs or fails")
@click.option("--timeout", type=click.FloatRange(min=0), default=600, show_default=True,
              help="seconds --wait waits at most")  # fmt: skip
@click.argument("words", nargs=-1, type=click.UNPROCESSED, metavar="[-- COMMAND [ARG]...]")
def submit(name, from_file, project, image, gpus, gpu_memory, cpu, memory, cpu_limit,
           memory_limit, pods, topology_required, topology_preferred, interactive, command, args,
           environment, ports, service_type, pvc, priority, estimate, wait, timeout,
           words):  # fmt: skip
    """Submit job NAME (Pending until the scheduler starts it), or every job of --from FILE.

    Words after `--` are the job's command, each kept whole (`allot submit ddp --pods 2 --
    torchrun --nnodes 2 train.py`); with --command they are its arguments, as Run:AI's."""
    if (name is None) == (from_file is None):
        raise click.UsageError("give a job NAME or --from FILE (a sweep), not both")
    if words and from_file is not None:
        raise click.UsageError("a command after -- is for one job NAME, not for --from FILE")
    if words and args:
        raise click.UsageError("give the arguments after -- or with --args, not both")
    if words and command:
        args = words
    elif words:
        command = words
    if from_file is not None:
        submit_sweep(from_file, project)
        return
    body = {
        "project": project_of(project), "name": name, "image": image, "gpus": gpus,
        "pods": pods, "type": "interactive" if interactive else "train",
        "command": list(command), "args": list(args), "environment": parse_env(environment),
        "ports": list(ports), "service_type": service_type, "volumes": parse_pvc(pvc),
        "priority": priority,
    }  # fmt: skip
    if gpus is None and gpu_memory is not None:  # by memory (the API refuses both at once)
        del body["gpus"]
    elif gpus is None:
        body["gpus"] = 1.0
    resources = {"gpu_memory": gpu_memory, "cpu": cpu, "memory": memory, "cpu_limit": cpu_limit,
                 "memory_limit": memory_limit}  # fmt: skip
    body |= {field: value for field, value in resources.items() if value is not None}
    if estimate is not None:
        body["estimate_s"] = estimate
    topology = {"required": topology_required, "preferred": topology_preferred}
    if any(topology.values()):  # issue 38 (R23.2, R23.3); the API names a level no pool has
        body["topology"] = {kind: level for kind, level in topology.items() if level}
    client = api()
    job = client.call("POST", "jobs/", json=body)
    click.echo(f"The job '{job['name']}' has been submitted successfully ({job['status']}).")
    for warning in job.get("warnings") or []:  # accepted, but it will wait (issue 24 item 10)
        click.echo(f"Warning: {warning}", err=True)
    if wait:
        wait_for_start(client, job, timeout)
    else:
        click.echo(
            f"You can run `allot get {job['name']} -p {job['project']}` to check its status."
        )


BULK_MAX = 1000  # jobs per request (the API's limit)


def read_sweep(file, project: str | None) -> list[dict]:
    """The jobs of a YAML or JSON file (a list, or a mapping with `jobs`), each with a project."""
    try:
        loaded = yaml.safe_load(file)
    except yaml.YAMLError as exc:
        raise CliError(f"{file.name}: not YAML or JSON: {exc}") from None
    jobs = loaded.get("jobs") if isinstance(loaded, dict) else loaded
    if not isinstance(jobs, list) or not jobs or not all(isinstance(j, dict) for j in jobs):
        raise CliError(f"{file.name}: expected a list of jobs (mappings), or {{jobs: [...]}}")
    default = None
    for job in jobs:
        if "project" not in job:
            default = default or project_of(project)
            job["project"] = default
    return jobs


def describe_sweep_errors(jobs: list[dict], errors: dict, offset: int) -> str:
    """`{"1": {"gpus": [...]}}` as one line per failing job, named by its index and name."""
    lines = []
    for index, fields in sorted(errors.items(), key=lambda item: int(item[0])):
        job = jobs[offset + int(index)]
        what = "; ".join(f"{field}: {' '.join(map(str, reasons))}"
                         for field, reasons in fields.items())  # fmt: skip
        lines.append(f"job {offset + int(index)} ({job.get('name', '?')}): {what}")
    return "\n".join(lines)


def submit_sweep(file, project: str | None) -> None:
    """POST the file's jobs to jobs/bulk/, at most BULK_MAX a request (each request all or
    nothing; a failure stops before the next request and says how many were stored)."""
    jobs = read_sweep(file, project)
    client, stored = api(), 0
    for offset in range(0, len(jobs), BULK_MAX):
        chunk = jobs[offset : offset + BULK_MAX]
        response = client.send("POST", "jobs/bulk/", json={"jobs": chunk})
        done = f" ({stored} submitted before)" if stored else ""
        if response.status_code == 400 and isinstance(response.json().get("jobs"), dict):
            errors = describe_sweep_errors(jobs, response.json()["jobs"], offset)
            raise CliError(f"no job of this batch was submitted{done}:\n{errors}")
        try:
            stored += client.answer(response)["created"]
        except CliError as exc:
            raise CliError(f"no job of this batch was submitted{done}: {exc}") from None
    click.echo(f"{stored} jobs have been submitted successfully (Pending).")


RUNNING, FINISHED = "Running", ("Succeeded", "Failed", "TimedOut", "Stopped")


def resources_of(job: dict) -> str:
    """A pod's requests and limits in Kubernetes' words: "cpu 2 (limit 4), memory 16Gi"."""
    parts = []
    for name in ("cpu", "memory"):
        if job.get(f"{name}_millis" if name == "cpu" else f"{name}_mib"):
            limit = job.get(f"{name}_limit")
            parts.append(f"{name} {job[name]}" + (f" (limit {limit})" if limit else ""))
    if job.get("gpu_memory"):
        parts.append(f"GPU memory {job['gpu_memory']}")
    return ", ".join(parts) or "no CPU or memory requested"


def why_not_running(job: dict) -> str:
    """Why a job that is not running yet is not: the scheduler's reason, or its stage."""
    if job["status"] == "ContainerCreating":
        return f"placed on {', '.join(job['nodes']) or 'its node'}; its containers are starting"
    return job["pending_reason"] or "not scheduled yet: waiting for the next scheduling cycle"


def wait_for_start(client: Api, job: dict, timeout: float, poll_s: float = 0.5) -> None:
    """Follow the job with a spinner on stderr until it runs (return) or fails, ends or the time
    is up (CliError saying why: its last event, or the scheduler's reason for waiting)."""
    path = f"jobs/{job['project']}/{job['name']}/"
    deadline = time.monotonic() + timeout
    err = Console(stderr=True, highlight=False)
    with err.status(f"{job['name']}: {job['status']}") as spinner:
        while True:
            job = client.call("GET", path)
            if job["status"] == RUNNING:
                break
            if job["status"] in FINISHED:
                events = client.all(f"{path}events/")
                last = events[-1]["message"] if events else "no event recorded"
                raise CliError(f"job {job['project']}/{job['name']} is {job['status']} and "
                               f"never seen Running: {last}")  # fmt: skip
            reason = why_not_running(job)
            if time.monotonic() >= deadline:
                raise CliError(f"job {job['project']}/{job['name']} is still {job['status']} "
                               f"after {timeout:g} s: {reason}")  # fmt: skip
            spinner.update(f"{job['name']}: {job['status']} ({reason})")
            time.sleep(poll_s)
    click.echo(f"The job '{job['name']}' is Running on {', '.join(job['nodes'])}.")


NOT_ENDED = "Pending,ContainerCreating,Running,Stopped"


@cli.command("list")
@click.option("-p", "--project", help="only this project (default: `allot project set`)")
@click.option("-A", "--all-projects", is_flag=True, help="jobs of every project you may see")
@click.option(
    "--all",
    "history",
    is_flag=True,
    help="also the jobs that ended (succeeded, failed, timed out), newest first",
)
@click.option("--status", help="only these statuses, comma-separated (e.g. Failed,TimedOut)")
@click.option("--user", help="only jobs submitted by this user")
@click.option("--since", help="submitted at or after: 2026-11-25 or 2026-11-25T12:04")
@click.option("--until", help="submitted before (a bare date: that whole day)")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=None,
    help="at most this many jobs (with --all: 50 unless given; 0: all)",
)
@click.option("--json", "as_json", is_flag=True, help="print JSON")
def list_jobs(project, all_projects, history, status, user, since, until, limit, as_json):
    """Jobs: NAME STATUS AGE NODE IMAGE PROJECT USER GPUs SERVICE URL(S).

    Without --all, the jobs that have not ended (pending, running, stopped); with --all, the
    history too (until the portal's retention setting prunes it), newest first."""  # fmt: skip
    params = {"project": None if all_projects else project_of(project), "user": user,
              "since": since, "until": until,
              "status": status or (None if history else NOT_ENDED)}  # fmt: skip
    if history:
        params["ordering"] = "-id"
        limit = 50 if limit is None else limit
    jobs, total = api().some("jobs/", limit or None, **params)
    if as_json:
        click.echo(json.dumps(jobs, indent=2))
        return
    table = Table("NAME", "STATUS", "AGE", "NODE", "IMAGE", "PROJECT", "USER", "GPUs",
                  "SERVICE URL(S)", box=None, pad_edge=False)  # fmt: skip
    for j in jobs:
        status = j["status"] + (" (stuck)" if j.get("stuck") else "")
        table.add_row(j["name"], status, age(j["submitted_at"]), ", ".join(j["nodes"]) or "-",
                      j["image"] or "-", j["project"], j["user"] or made_by(j) or "-",
                      f"{gpus(j['allocated_gpus'])}/{gpus(j['gpus'] * j['pods'])}",
                      urls_of(j))  # fmt: skip
    show(table, out)
    used = sum(j["allocated_gpus"] for j in jobs)
    more = f" (the newest {len(jobs)} of {total}; --limit 0 for all)" if total > len(jobs) else ""
    click.echo(f"\n{len(jobs)} job(s){more}, {gpus(used)} GPU(s) in use", err=True)  # not for pipes


@cli.command()
@click.argument("name")
@click.option("-p", "--project", help="the project (default: `allot project set`)")
@click.option("--json", "as_json", is_flag=True, help="print JSON")
def get(name, project, as_json):
    """A job's status, placement, why it waits, and its events with the scheduler's reasons."""
    client, project = api(), project_of(project)
    job = client.call("GET", f"jobs/{project}/{name}/")
    events = client.all(f"jobs/{project}/{name}/events/")
    if as_json:
        click.echo(json.dumps({**job, "events": events}, indent=2))
        return
    click.echo(f"NAME: {job['name']}\nPROJECT: {job['project']}\nTYPE: {job['type']}")
    stuck = " (stuck: no new output or progress, see EVENTS)" if job.get("stuck") else ""
    click.echo(f"STATUS: {job['status']}{stuck}\nGPUs: {gpus(job['gpus'])} x {job['pods']} pod(s), "
               f"allocated {gpus(job['allocated_gpus'])}")  # fmt: skip
    click.echo(f"NODE(S): {', '.join(job['nodes']) or '-'}\nIMAGE: {job['image'] or '-'}")
    click.echo(f"PER POD: {resources_of(job)}")
    if job.get("topology") or job.get("domain"):  # issue 38 (R23)
        asked = (job.get("topology") or {}).items()
        wanted = ", ".join(f"{kind} {level}" for kind, level in asked)
        click.echo(f"TOPOLOGY: {wanted or '-'}; landed in {job.get('domain') or '-'}")
    if job["status"] == "Pending":
        click.echo(
            f"WAITING {job['wait_s']:g} s BECAUSE: {job['pending_reason'] or 'not yet scheduled'}"
        )
        click.echo(f"EXPECTED START: {eta_of(job)}")
    if job.get("expected_s"):
        click.echo(f"PREDICTED RUN TIME: {span(job['expected_s'])} ({job['expected_basis']})")
    click.echo(f"SERVICE URL(S): {urls_of(job)}\n\nEVENTS:")
    table = Table("TIME", "KIND", "MESSAGE", box=None, pad_edge=False)
    for e in events:
        table.add_row(e["time"][11:19], e["kind"], e["message"])
    show(table, out)


@cli.command()
@click.argument("kind_or_name")
@click.argument("name", required=False)
@click.option("-p", "--project", help="the project (default: `allot project set`)")
@click.option("--json", "as_json", is_flag=True, help="print JSON")
def describe(kind_or_name, name, project, as_json):
    """Everything about a job, as `runai describe job NAME`: status, placement, why it waits and
    when it should start, its address, its runs (where, how long, how each ended) and events.

    `allot describe NAME` and `allot describe job NAME` are the same."""
    if name is None:
        name = kind_or_name
    elif kind_or_name != "job":
        raise CliError(f"allot describe knows jobs only: `allot describe job {name}`")
    client, project = api(), project_of(project)
    job = client.call("GET", f"jobs/{project}/{name}/")
    runs = client.all(f"jobs/{project}/{name}/runs/")
    events = client.all(f"jobs/{project}/{name}/events/")
    if as_json:
        click.echo(json.dumps({**job, "runs": runs, "events": events}, indent=2))
        return
    stuck = " (stuck: no new output or progress, see EVENTS)" if job.get("stuck") else ""
    fields = [
        ("Name", job["name"]), ("Project", job["project"]), ("User", job.get("user") or "-"),
        ("Type", job["type"]), ("Status", job["status"] + stuck),
        ("Image", job["image"] or "-"),
        *([("Made outside Allot", made_outside(job))] if job.get("external") else []),
        ("GPUs", f"{gpus(job['gpus'])} x {job['pods']} pod(s), "
                 f"allocated {gpus(job['allocated_gpus'])}"),
        ("Per pod", resources_of(job)), ("Node(s)", ", ".join(job["nodes"]) or "-"),
        ("Submitted", job.get("submitted_at") or "-"), ("Started", job.get("started_at") or "-"),
    ]  # fmt: skip
    if job["status"] in ("Pending", "ContainerCreating"):
        fields.append(("Why not running", why_not_running(job)))
    if job["status"] == "Pending":
        fields.append(("Expected start", eta_of(job)))
    if job.get("expected_s"):
        fields.append(("Predicted run time", f"{span(job['expected_s'])} "
                                              f"({job['expected_basis']})"))  # fmt: skip
    fields.append(("URL(s)", urls_of(job)))
    width = max(len(label) for label, _ in fields) + 2
    for label, value in fields:
        click.echo(f"{label + ':':<{width}}{value}")
    click.echo("\nRuns:")
    table = Table("RUN", "STARTED", "DURATION", "NODES", "GPUs", "GPU-HOURS", "END", "REASON",
                  box=None, pad_edge=False)  # fmt: skip
    for run in runs:
        started = run["started_at"][:19].replace("T", " ")
        table.add_row(str(run["number"]), started, span(run["duration_s"]),
                      ", ".join(run["nodes"]) or "-", f"{gpus(run['gpus'])}",
                      gpu_hours(run["gpu_hours"]), run["end"] or "running",
                      run["reason"] or "-")  # fmt: skip
    if runs:
        show(table, out)
    else:
        click.echo("  none yet")
    click.echo("\nEvents:")
    table = Table("TIME", "KIND", "MESSAGE", box=None, pad_edge=False)
    for e in events:
        table.add_row(e["time"][11:19], e["kind"], e["message"])
    show(table, out)


@cli.command()
@click.argument("name")
@click.option("-p", "--project", help="the project (default: `allot project set`)")
@click.option("--tail", type=int, default=200, show_default=True, help="last lines to print")
@click.option("-f", "--follow", is_flag=True, help="keep printing new lines")
def logs(name, project, tail, follow):
    """A job's log lines (marked when the cluster is simulated)."""
    client, project = api(), project_of(project)
    seen: list[str] = []
    while True:
        body = client.call("GET", f"jobs/{project}/{name}/logs/", params={"tail": tail})
        lines = body["lines"]
        start = _new_from(seen, lines) if seen else 0
        for line in lines[start:]:
            click.echo(line)
        seen = lines
        if not follow or body["status"] in FINISHED:
            return
        time.sleep(2)


def made_by(job: dict) -> str:
    """ "external Job" for a workload another tool made (issue 33), else ""."""
    external = job.get("external")
    return f"external {external['kind']}" if external else ""


def made_outside(job: dict) -> str:
    """Where a workload another tool made lives and who deletes it (issue 33)."""
    e = job["external"]
    return (f"{e['kind']} {e['owner']} in namespace {e['namespace']}; its owner deletes it "
            f"(kubectl delete {e['kind'].lower()} {e['owner']} -n {e['namespace']})")  # fmt: skip


def _new_from(seen: list[str], lines: list[str]) -> int:
    """Index of the first line of `lines` not printed yet (the log window slides)."""
    last = seen[-1] if seen else None
    for index in range(len(lines) - 1, -1, -1):
        if lines[index] == last:
            return index + 1
    return 0


@cli.command()
@click.argument("names", nargs=-1, required=True)
@click.option("-p", "--project", help="the project (default: `allot project set`)")
def delete(names, project):
    """Remove jobs whatever their status: a running one ends and frees its GPUs at once; its
    name is free again (to keep a job and run it later, use `allot stop`)."""
    client, project = api(), project_of(project)
    for name in names:
        client.call("DELETE", f"jobs/{project}/{name}/")
        click.echo(f"The job '{name}' has been deleted")


@cli.command()
@click.argument("names", nargs=-1, required=True)
@click.option("-p", "--project", help="the project (default: `allot project set`)")
def stop(names, project):
    """End jobs' runs and keep the jobs, Stopped (GPUs free at once; events, runs and logs kept,
    names still taken) until `allot resume` or `allot delete`."""
    client, project = api(), project_of(project)
    for name in names:
        client.call("POST", f"jobs/{project}/{name}/stop/")
        click.echo(f"The job '{name}' has been stopped")


@cli.command()
@click.argument("names", nargs=-1, required=True)
@click.option("-p", "--project", help="the project (default: `allot project set`)")
def resume(names, project):
    """Queue Stopped jobs again with the same spec (Pending; the next start is a new run)."""
    client, project = api(), project_of(project)
    for name in names:
        job = client.call("POST", f"jobs/{project}/{name}/resume/")
        click.echo(f"The job '{name}' has been resumed ({job['status']})")


@cli.command()
@click.argument("name")
@click.option("-p", "--project", help="the project (default: `allot project set`)")
def bash(name, project):
    """A shell in a running job's first pod (bash where the image has it, else sh).

    The portal says when it cannot (the job is not Running, you may only view the project, or
    the cluster is simulated and has no containers). Exits with the shell's exit code."""
    from .shell import run_shell

    client, project = api(), project_of(project)
    answer = client.call("POST", f"jobs/{project}/{name}/shell/")
    settings = config.current()
    sys.exit(run_shell(settings.url, settings.token or "", answer["websocket"]))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="print the overview as JSON")
@click.option("--watch", type=click.FloatRange(min=0.5), default=None, metavar="SECONDS",
              help="refresh every SECONDS until Ctrl-C")  # fmt: skip
def top(as_json, watch):
    """Cluster tiles, and each project's quota, fair share, allocation, jobs and utilization."""
    client = api()
    if as_json:
        click.echo(json.dumps(client.call("GET", "overview/"), indent=2))
        return
    if watch is None:
        out.print(top_view(client.call("GET", "overview/")))
        return
    from rich.live import Live

    with Live(top_view(client.call("GET", "overview/")), console=out, auto_refresh=False) as live:
        try:
            while True:
                time.sleep(watch)
                live.update(top_view(client.call("GET", "overview/")), refresh=True)
        except KeyboardInterrupt:
            pass


def percent(value: float | None, simulated: bool) -> str:
    """A utilization share as '42%' ('-' when unmeasured), with ' sim' when it is synthetic."""
    if value is None:
        return "-"
    return f"{round(value * 100)}%" + (" sim" if simulated else "")


def cpu_and_memory(cluster: dict) -> str:
    """'   CPU 12/160 cores, MEMORY 96/1024 GiB' requested of the allocatable (issue 26); '' when
    no node tracks them (or the portal predates them)."""
    figure = {
        key: cluster.get(key, 0)
        for key in ("cpu_millis", "allocated_cpu_millis", "memory_bytes", "allocated_memory_bytes")
    }
    if not figure["cpu_millis"] and not figure["memory_bytes"]:
        return ""
    cores = f"{figure['allocated_cpu_millis'] / 1000:g}/{figure['cpu_millis'] / 1000:g}"
    used, total = (
        round(figure[key] / 2**30, 2) for key in ("allocated_memory_bytes", "memory_bytes")
    )
    gib = f"{used:g}/{total:g}"
    return f"   CPU {cores} cores, MEMORY {gib} GiB"


def top_view(overview: dict):
    """The overview's tiles as a line, then a table of projects (over-quota GPUs marked)."""
    from rich.console import Group as Lines
    from rich.text import Text

    c = overview["cluster"]
    simulated = " (simulated cluster)" if overview.get("simulated") else ""
    tiles = Text(
        f"NODES {c['ready_nodes']}/{c['nodes']} ready   "
        f"GPUs {gpus(c['allocated_gpus'])}/{gpus(c['gpus'])} allocated, {gpus(c['free_gpus'])} free"
        f" ({gpus(c['ready_gpus'])} ready)   "
        f"RUNNING {c['running_jobs']}   PENDING {c['pending_jobs']}   "
        f"UTIL {percent(c.get('utilization'), c.get('utilization_simulated', False))}"
        f"{simulated}{cpu_and_memory(c)}"
    )
    table = Table("PROJECT", "QUOTA", "FAIR-SHARE", "ALLOCATED", "RUNNING", "PENDING", "UTIL",
                  box=None, pad_edge=False)  # fmt: skip
    for p in overview["projects"]:
        over = p.get("over_quota_gpus", max(p["allocated_gpus"] - p["quota"], 0))
        allocated = f"{gpus(p['allocated_gpus'])}" + (
            f" (+{gpus(over)} over quota)" if over else ""
        )
        util = percent(p.get("utilization"), p.get("utilization_simulated", False))
        table.add_row(p["name"], f"{gpus(p['quota'])}", f"{gpus(p['fair_share'])}", allocated,
                      str(p["running_jobs"]), str(p["pending_jobs"]), util)  # fmt: skip
    return Lines(tiles, Text(""), table)


@cli.command()
@click.option(
    "--by",
    "group_by",
    type=click.Choice(["project", "department", "user"]),
    default="project",
    show_default=True,
    help="group the GPU-hours by",
)
@click.option(
    "--per",
    type=click.Choice(["total", "day", "month"]),
    default="total",
    show_default=True,
    help="one row per group, or per day or month and group",
)
@click.option("--since", help="from: 2026-11-01 or 2026-11-01T08:00 (default: 7 days back)")
@click.option("--until", help="to, exclusive; a bare date is included (default: now)")
@click.option("-p", "--project", help="only this project")
@click.option("--user", help="only this user's runs")
@click.option("--csv", "as_csv", is_flag=True, help="print the portal's CSV")
@click.option("--json", "as_json", is_flag=True, help="print JSON")
def usage(group_by, per, since, until, project, user, as_csv, as_json):
    """GPU-hours allocated, used and over quota, like Slurm's sreport (GET /api/v1/accounting/);
    core-hours and memory GiB-hours beside them when runs held CPU or memory.

    Cluster admins see every team; others their own projects. USED is the GPU-hours weighted by
    the measured utilization ("not measured" without one; "sim": synthetic). The budgets one may
    see follow (GET /api/v1/budgets/): used, left, and when each runs out at the current burn
    rate."""  # fmt: skip
    params = {"group_by": group_by, "period": "month" if per == "month" else "day",
              "since": since, "until": until, "project": project, "user": user}  # fmt: skip
    params = {k: v for k, v in params.items() if v is not None}
    client = api()
    if as_csv:
        response = client.send("GET", "accounting/", params={**params, "format": "csv"})
        if response.status_code >= 400:
            client.answer(response)
        click.echo(response.text, nl=False)
        return
    report = client.call("GET", "accounting/", params=params)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(heading(report))
    show(usage_table(report, per_period=per != "total"), out)
    budgets = client.call("GET", "budgets/", params={"page_size": 1000})["results"]
    budgets = [b for b in budgets if project in (None, b["project"])]
    if budgets:
        click.echo("\nBudgets left (GPU-hours of each budget's current window):")
        show(budgets_table(budgets), out)


register_reservations(cli, lambda: api(), out)  # `allot reservations` (issue 37)
register_limits(cli, lambda: api(), out)  # `allot limits` (issue 36)
register_what_if(cli, lambda: api(), out)  # `allot what-if` (issue 37)


@cli.command()
def version():
    """The CLI's version and, when configured, the portal it talks to."""
    click.echo(f"allot {__version__}")
    settings = config.current()
    if settings.url:
        click.echo(f"portal: {settings.url}")
