"""The fault tier on the lab (issue 40): the production-shaped stack under one fault at a time.

A lab of its own (4 KWOK nodes x 8 GPUs), a PostgreSQL cluster and a Redis server of this
module's own (other engineers' tests use the machine's; these are restarted), and the stack of
`benchmarks/stack.py` (gunicorn with uvicorn, a Celery worker and beat) with the Kubernetes
agent. A REST client submits single jobs and gangs, deletes some and moves quota between two
projects, while one fault at a time is injected: kill -9 of the Celery worker between cycles
and in the middle of one (once the first pod of a burst exists), kill -9 of kube-apiserver
and of etcd restarted after 3 s (`scripts/k8s-lab restart`), a Redis restart, a PostgreSQL
restart (immediate: a crash), a kill -9 of the web tier.

A sampler lists the API server's pods every 0.5 s: no (node, GPU) is ever held by two
non-terminal job pods (their `allot.io/node` + `allot.io/devices` annotations; terminating
ones count, since their containers may still run). After each fault, with the client paused,
the cluster comes to hold exactly the pods the portal plans: no job lost or duplicated, no gang
half placed, no orphan pod. Each fault's figures (recovery: a probe job submitted once the
component is back, until its pod is Running on the API server; requests failed; lost;
duplicated; over-placed samples) are printed as one table (`-s` shows it).

The second test is the recovery after a 5 s API-server outage: jobs submitted during it are
Running within 15 s of the server being ready.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kubernetes import client, config

from agents.ports import free_port
from benchmarks.stack import Stack, call
from tests.k8s.lab import lab_command, start_lab
from tests.k8s.portal_lab import MANAGED, planned_pods

pytestmark = [pytest.mark.k8s, pytest.mark.slow]

PG_BIN = Path("/usr/lib/postgresql/15/bin")
NODES, GPUS_PER_NODE = 4, 8
LOAD_GPUS = 18  # the client keeps at most this many GPUs asked for, so a probe always fits
SAMPLE_S = 0.5
TERMINAL = ("Succeeded", "Failed")


def until(check, timeout: float, every: float = 0.1):
    """`check()` once it is true, or None after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if result := check():
                return result
        time.sleep(every)
    return None


# --- Private PostgreSQL and Redis ---------------------------------------------------------------


class Postgres:
    """A throwaway PostgreSQL cluster on a free port, run as the postgres user (initdb refuses
    root), restarted with `-m immediate` (a crash: no checkpoint, recovery at start)."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="allot-fault-pg-"))
        self.port = free_port()
        self.url = f"postgres://postgres@127.0.0.1:{self.port}"
        shutil.chown(self.dir, "postgres", "postgres")
        self._as_postgres(PG_BIN / "initdb", "-D", self.dir / "data", "-U", "postgres",
                          "--auth=trust", "-E", "UTF8")  # fmt: skip
        self.start()

    def _as_postgres(self, *command) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *map(str, command)], check=True, capture_output=True,
                       cwd=self.dir)  # fmt: skip

    def start(self) -> None:
        options = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c max_connections=200")  # fmt: skip
        self._as_postgres(PG_BIN / "pg_ctl", "-D", self.dir / "data", "-o", options,
                          "-l", self.dir / "log", "-w", "start")  # fmt: skip

    def restart(self) -> None:
        self._as_postgres(PG_BIN / "pg_ctl", "-D", self.dir / "data", "-m", "immediate", "stop")
        self.start()

    def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self._as_postgres(PG_BIN / "pg_ctl", "-D", self.dir / "data", "-m", "immediate",
                              "stop")  # fmt: skip
        shutil.rmtree(self.dir, ignore_errors=True)


class Redis:
    """A Redis server of this module's own, without persistence (as the compose file's)."""

    def __init__(self):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = None
        self.start()

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        assert until(lambda: socket.create_connection(("127.0.0.1", self.port), 1), 10)

    def restart(self) -> None:
        self.process.kill()
        self.process.wait(10)
        time.sleep(1)
        self.start()

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(10)


# --- The stack on the lab -----------------------------------------------------------------------


@dataclass
class Setup:
    stack: Stack
    token: str
    lab_dir: Path
    kubeconfig: str
    core: client.CoreV1Api
    postgres: Postgres
    redis: Redis

    def rest(self, method: str, path: str, body: dict | None = None):
        return call(self.stack.base, self.token, method, f"/api/v1/{path}", body)

    def lab(self, *args: str) -> str:
        done = lab_command(*args, "--dir", str(self.lab_dir))
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout


@pytest.fixture(scope="module")
def setup() -> Iterator[Setup]:
    lab_dir, state = start_lab("allot-k8s-fault-lab-", "--nodes", str(NODES),
                               "--gpus-per-node", str(GPUS_PER_NODE))  # fmt: skip
    postgres = redis = stack = None
    try:
        postgres, redis = Postgres(), Redis()
        env = {"ALLOT_AGENT": "kubernetes", "KUBECONFIG": state["kubeconfig"],
               "ALLOT_K8S_GRACE_PERIOD_S": "0", "ALLOT_CYCLE_INTERVAL_S": "1"}  # fmt: skip
        stack = Stack("allot_fault_tier", redis.url, web=1, port=free_port(), env=env,
                      pg=postgres.url)  # fmt: skip
        token = stack.start()
        api = config.new_client_from_config(config_file=state["kubeconfig"])
        found = Setup(stack, token, lab_dir, state["kubeconfig"], client.CoreV1Api(api), postgres,
                      redis)  # fmt: skip
        assert until(lambda: found.rest("GET", "nodes/?page_size=1")["count"] >= NODES, 60)
        for name, quota in (("fa", 12), ("fb", 12), ("probe", 4)):
            found.rest("POST", "projects/", {"name": name, "quota": quota})
        yield found
        api.close()
    finally:
        if stack is not None:
            stack.stop()
        for part in (redis, postgres):
            if part is not None:
                part.stop()
        lab_command("clean", "--dir", str(lab_dir))


# --- The sampler and the client -----------------------------------------------------------------


def holders(pods: list[client.V1Pod]) -> dict[tuple[str, str], list[str]]:
    """(node, device) -> the non-terminal job pods whose annotations hold it."""
    held: dict[tuple[str, str], list[str]] = {}
    for pod in pods:
        labels, notes = pod.metadata.labels or {}, pod.metadata.annotations or {}
        if "allot.io/job" not in labels or pod.status.phase in TERMINAL:
            continue
        for device in filter(None, notes.get("allot.io/devices", "").split(",")):
            key = (notes.get("allot.io/node", ""), device)
            state = f"{pod.status.phase}{' deleted' if pod.metadata.deletion_timestamp else ''}"
            held.setdefault(key, []).append(
                f"{pod.metadata.namespace}/{pod.metadata.name} ({state}, "
                f"created {pod.metadata.creation_timestamp:%H:%M:%S})"
            )
    return held


class Sampler(threading.Thread):
    """Lists the job pods every 0.5 s; keeps every sample where a GPU had two holders."""

    def __init__(self, kubeconfig: str):
        super().__init__(daemon=True)
        configuration = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        configuration.retries = 0  # a sample the API server does not answer is missed
        self.core = client.CoreV1Api(client.ApiClient(configuration))
        self.stopping = threading.Event()
        self.samples = self.missed = 0
        self.error: Exception | None = None
        self.over: list[tuple[float, tuple[str, str], list[str]]] = []

    def run(self) -> None:
        while not self.stopping.wait(SAMPLE_S):
            try:
                pods = self.core.list_pod_for_all_namespaces(
                    label_selector=MANAGED, _request_timeout=2
                ).items
            except Exception:  # the API server is down: that sample is missed, not passed
                self.missed += 1
                continue
            self.samples += 1
            now = time.monotonic()
            try:
                self.over += [(now, k, v) for k, v in holders(pods).items() if len(v) > 1]
            except Exception as error:  # a sampler that died would pass every check
                self.error = error
                raise


@dataclass
class Client:
    """Submits, deletes and moves quota through REST in a thread; remembers what the portal
    acknowledged, and when requests failed."""

    setup: Setup
    acknowledged: dict[tuple[str, str], int] = field(default_factory=dict)  # -> GPUs asked
    deleted: set[tuple[str, str]] = field(default_factory=set)
    # a DELETE that got no answer: carried out or not, nobody knows until it is asked again
    unanswered_deletes: set[tuple[str, str]] = field(default_factory=set)
    uncertain: set[tuple[str, str]] = field(default_factory=set)
    failures: list[tuple[float, str]] = field(default_factory=list)
    requests: int = 0
    counter: int = 0
    running: threading.Event = field(default_factory=threading.Event)
    stopping: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self):
        self.random = random.Random(40)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def request(self, method: str, path: str, body: dict | None = None) -> int | None:
        """The answer's status, or None when no answer came (refused, reset or timed out: the
        request may or may not have been carried out)."""
        self.requests += 1
        try:
            self.setup.rest(method, path, body)
            return 200
        except urllib.error.HTTPError as error:
            self.failures.append((time.monotonic(), f"{method} {error.code}"))
            return error.code
        except OSError as error:
            reason = getattr(error, "reason", error)
            self.failures.append((time.monotonic(), f"{method} {type(reason).__name__}"))
            return None

    def submit(self, project: str, name: str, gpus: int, pods: int = 1) -> bool:
        body = {"project": project, "name": name, "gpus": gpus, "pods": pods,
                "image": "allot/fault:1"}  # fmt: skip
        ok = self.request("POST", "jobs/", body) == 200
        (self.acknowledged.__setitem__((project, name), gpus * pods) if ok
         else self.uncertain.add((project, name)))  # fmt: skip
        return ok

    def live(self) -> dict[tuple[str, str], int]:
        return {k: v for k, v in self.acknowledged.items() if k not in self.deleted}

    def step(self) -> None:
        self.counter += 1
        live = self.live()
        if self.counter % 15 == 0:
            first = self.counter // 15 % 2
            self.request("PATCH", "projects/fa/", {"quota": 4 if first else 16})
            self.request("PATCH", "projects/fb/", {"quota": 16 if first else 4})
        elif sum(live.values()) < LOAD_GPUS:
            project = self.random.choice(("fa", "fb"))
            if self.counter % 5 == 0:
                self.submit(project, f"g-{self.counter:04d}", 2, pods=2)
            else:
                self.submit(project, f"j-{self.counter:04d}", self.random.choice((1, 2)))
        else:
            victim = self.random.choice(sorted(live))
            status = self.request("DELETE", f"jobs/{victim[0]}/{victim[1]}/")
            if status is None:
                self.unanswered_deletes.add(victim)
            elif status == 200 or (status == 404 and victim in self.unanswered_deletes):
                # a 404 after an unanswered DELETE: that first DELETE was carried out (the web
                # worker died after committing, before answering); any other 404 is a lost job
                self.deleted.add(victim)

    def _run(self) -> None:
        while not self.stopping.is_set():
            if self.running.wait(0.2):
                self.step()
                time.sleep(0.15)


# --- What the cluster and the portal hold -------------------------------------------------------


def cluster_pods(core: client.CoreV1Api) -> dict[tuple[str, str], tuple[str | None, bool]]:
    """(project, pod) -> (node, Running) of every job pod, terminating ones included."""
    found = core.list_pod_for_all_namespaces(label_selector=MANAGED).items
    return {
        (pod.metadata.labels["allot.io/project"], pod.metadata.name): (
            pod.spec.node_name,
            pod.status.phase == "Running" and pod.metadata.deletion_timestamp is None,
        )
        for pod in found
        if "allot.io/job" in (pod.metadata.labels or {})
    }


@dataclass
class Check:
    lost: list = field(default_factory=list)
    duplicated: list = field(default_factory=list)
    half_gangs: list = field(default_factory=list)
    orphans: list = field(default_factory=list)
    unplaced: list = field(default_factory=list)


def consistent(setup: Setup, load: Client, timeout: float = 60) -> Check:
    """Wait (client paused) until the cluster holds exactly the portal's planned pods, each
    Running; then what differs: jobs lost (acknowledged, not deleted, missing from the portal),
    duplicated (two rows of one job), gangs half placed, orphan pods, planned pods missing."""

    def compare() -> Check:
        rows = setup.rest("GET", "jobs/?page_size=1000")["results"]
        pods, want = cluster_pods(setup.core), planned_pods(rows)
        found = Check()
        names = [(row["project"], row["name"]) for row in rows]
        found.duplicated = sorted({n for n in names if names.count(n) > 1})
        # missing after an unanswered DELETE is that DELETE carried out, not a loss
        found.lost = sorted(set(load.live()) - set(names) - load.unanswered_deletes)
        found.orphans = sorted(set(pods) - set(want))
        found.unplaced = sorted(k for k, node in want.items() if pods.get(k) != (node, True))
        for row in rows:
            if row["pods"] > 1:
                up = [pods.get((row["project"], f"{row['name']}-{i}"), (None, False))[1]
                      for i in range(row["pods"])]  # fmt: skip
                if any(up) and not all(up):
                    found.half_gangs.append((row["project"], row["name"]))
        return found

    def settled() -> Check | None:
        found = compare()
        return None if any(vars(found).values()) else found

    return until(settled, timeout, every=0.5) or compare()


def probe_recovery(setup: Setup, name: str, timeout: float = 90) -> float | None:
    """Submit a one-GPU probe job (retrying while the portal refuses) and return the seconds
    until its pod is Running on the API server."""
    start = time.monotonic()

    def submitted() -> bool:
        try:
            setup.rest("POST", "jobs/", {"project": "probe", "name": name, "gpus": 1})
        except urllib.error.HTTPError as error:
            return error.code == 409  # an earlier try that answered too late
        return True

    assert until(submitted, 60), f"the portal never took probe {name}"

    def running() -> bool:
        pod = setup.core.read_namespaced_pod(f"{name}-0", "allot-probe", _request_timeout=2)
        return pod.status.phase == "Running"

    up = until(running, timeout)
    elapsed = time.monotonic() - start
    with contextlib.suppress(Exception):
        setup.rest("DELETE", f"jobs/probe/{name}/")
    return round(elapsed, 1) if up else None


# --- The faults ---------------------------------------------------------------------------------


def kill_worker_between_cycles(setup: Setup, load: Client) -> None:
    load.running.clear()
    time.sleep(1.5)  # the client's last submission carried out: no cycle has work to do
    setup.stack.restart("worker")


def kill_worker_mid_cycle(setup: Setup, load: Client) -> None:
    """A burst of jobs, and kill -9 as soon as the first of its pods exists: the cycle that
    placed them is carrying out."""
    load.running.clear()
    burst = [f"m-{load.counter:04d}-{i}" for i in range(4)]
    for name in burst:
        load.submit("fa", name, 1)
    load.counter += 1

    def first_pod() -> bool:
        pods = cluster_pods(setup.core)
        return any(("fa", f"{name}-0") in pods for name in burst)

    assert until(first_pod, 30, every=0.02), "no pod of the burst appeared"
    setup.stack.restart("worker")


def restart_lab(component: str):
    def inject(setup: Setup, load: Client) -> None:
        setup.lab("restart", component, "--down-s", "3")

    return inject


def restart_redis(setup: Setup, load: Client) -> None:
    setup.redis.restart()


def restart_postgres(setup: Setup, load: Client) -> None:
    setup.postgres.restart()


def kill_web(setup: Setup, load: Client) -> None:
    setup.stack.restart("web")
    assert until(lambda: setup.rest("GET", "overview/"), 30)


FAULTS = {
    "worker kill -9 between cycles": kill_worker_between_cycles,
    "worker kill -9 mid-cycle": kill_worker_mid_cycle,
    "kube-apiserver kill -9, back after 3 s": restart_lab("kube-apiserver"),
    "etcd kill -9, back after 3 s": restart_lab("etcd"),
    "Redis restart": restart_redis,
    "PostgreSQL restart (immediate)": restart_postgres,
    "web worker kill -9": kill_web,
}


def test_no_gpu_is_held_twice_and_nothing_is_lost_whatever_restarts(setup):
    sampler = Sampler(setup.kubeconfig)
    sampler.start()
    load = Client(setup)
    rows, failed = [], []
    try:
        for number, (fault, inject) in enumerate(FAULTS.items()):
            load.running.set()
            time.sleep(4)  # load before the fault
            failures_before, over_before = len(load.failures), len(sampler.over)
            began = time.monotonic()
            inject(setup, load)
            load.running.set()
            recovery = probe_recovery(setup, f"p-{number}")
            time.sleep(2)
            load.running.clear()
            found = consistent(setup, load)
            over = sampler.over[over_before:]
            row = {
                "fault": fault,
                "recovery_s": recovery,
                "requests_failed": len(load.failures) - failures_before,
                "lost": len(found.lost) + len(found.unplaced),
                "duplicated": len(found.duplicated),
                "over_placed_samples": len({t for t, _, _ in over}),
                "half_gangs": len(found.half_gangs),
                "orphans": len(found.orphans),
                "fault_window_s": round(time.monotonic() - began, 1),
                "failures": dict(Counter(text for _, text in load.failures[failures_before:])),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
            if any(vars(found).values()) or over or recovery is None:
                failed.append((fault, vars(found), over[:5]))
    finally:
        load.stopping.set()
        load.running.set()
        sampler.stopping.set()
        sampler.join(5)
        load.thread.join(10)
    print(f"\n{'fault':40} recovery_s failed lost dup over-placed half-gangs orphans")
    for row in rows:
        print(f"{row['fault']:40} {row['recovery_s']!s:>10} {row['requests_failed']:>6} "
              f"{row['lost']:>4} {row['duplicated']:>3} {row['over_placed_samples']:>11} "
              f"{row['half_gangs']:>10} {row['orphans']:>7}")  # fmt: skip
    print(
        f"samples: {sampler.samples} taken, {sampler.missed} missed (API server down); "
        f"requests: {load.requests}, jobs acknowledged: {len(load.acknowledged)}"
    )
    assert sampler.samples > 50 and sampler.error is None, sampler.error
    assert not failed, failed


def test_the_sampler_counts_two_live_pods_on_one_gpu():
    """The tier's check can fail: two non-terminal job pods whose annotations name the same GPUs
    are held twice (a terminating one still counts: its containers may run); a third on another
    GPU, a Succeeded pod and a pod that is no job's (a reservation) do not count."""

    def pod(name: str, devices: str, phase: str = "Running", job: bool = True, gone=False):
        labels = {"allot.io/project": "p", **({"allot.io/job": name} if job else {})}
        notes = {"allot.io/node": "kwok-gpu-0", "allot.io/devices": devices}
        return client.V1Pod(
            metadata=client.V1ObjectMeta(
                name=name, namespace="allot-p", labels=labels, annotations=notes,
                creation_timestamp=datetime.now(UTC),
                deletion_timestamp=datetime.now(UTC) if gone else None,
            ),
            status=client.V1PodStatus(phase=phase),
        )  # fmt: skip

    held = holders([pod("a", "1,2"), pod("b", "2,1", gone=True), pod("c", "3"),
                    pod("d", "3", phase="Succeeded"), pod("r", "3", job=False)])  # fmt: skip
    twice = {key: len(names) for key, names in held.items() if len(names) > 1}
    assert twice == {("kwok-gpu-0", "1"): 2, ("kwok-gpu-0", "2"): 2}
    assert "Running deleted" in " ".join(held[("kwok-gpu-0", "1")])


def test_jobs_submitted_during_a_5_s_api_server_outage_run_within_15_s(setup):
    """Kill the API server, submit while it is down, start it 5 s later: the jobs' pods are
    Running within 15 s of its answering again (issue 40 saw a minute: one back-off per thread)."""
    names = [f"o-{i}" for i in range(3)]
    outage = threading.Thread(
        target=lambda: setup.lab("restart", "kube-apiserver", "--down-s", "5"), daemon=True
    )
    outage.start()
    time.sleep(1)
    for name in names:
        setup.rest("POST", "jobs/", {"project": "probe", "name": name, "gpus": 1})
    time.sleep(4)  # the server is down for 5 s: from here, look for it every 0.1 s

    def answers() -> bool:
        setup.core.list_namespace(limit=1, _request_timeout=1)
        return True

    assert until(answers, 120, every=0.1)
    ready = time.monotonic()  # the first request the restarted server answered
    outage.join(120)

    def running() -> bool:
        pods = cluster_pods(setup.core)
        return all(pods.get(("probe", f"{name}-0"), (None, False))[1] for name in names)

    assert until(running, 30)
    elapsed = time.monotonic() - ready
    print(f"\nrecovery after a 5 s API-server outage: {elapsed:.1f} s from its first answer")
    assert elapsed < 15, elapsed
    for name in names:
        setup.rest("DELETE", f"jobs/probe/{name}/")
