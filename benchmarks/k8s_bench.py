"""KAI's scale test on a real control plane with KWOK (`make bench-k8s`): Allot as the scheduler.

A lab of its own (`scripts/k8s-lab start --nodes 500`: etcd, kube-apiserver,
kube-controller-manager and KWOK, 500 fake nodes of 8 GPUs), and the stack of `stack.py`
(gunicorn with uvicorn workers, a Celery worker and beat, PostgreSQL, Redis) with
ALLOT_AGENT=kubernetes and KUBECONFIG pointing at the lab.

0. **floor** (unless `--no-floor`), before Allot's stack starts: the stock kube-scheduler of the
   lab's pinned Kubernetes (`scripts/k8s-lab kube-scheduler on`, its default settings) places the
   fill's 4,000 jobs as plain 1-GPU pods created straight on the API server by the same number
   of client threads; timed like the fill. The pods are then deleted and the scheduler stopped.
   Issue 39's goals are ratios to it (`fill_vs_floor`), since absolute times on these machines
   move with the load.

Then, through the REST API:

1. **fill**: 100 projects of quota 40, 4,000 single-GPU jobs, one POST each from client threads
   (KAI's test creates one pod each; `--bulk N` sends sweeps of N through `jobs/bulk/`). Timed
   from the first POST until the API server reports 4,000 of Allot's pods Running (a watch in
   this process counts them: the cluster's view, not the portal's).
2. **reclaim** of the same shape: the 100 projects drop to quota 0 (everything they hold is
   borrowed), 50 new projects of quota 80 submit their quota, 4,000 jobs. Timed from their
   first POST until no pod of the old projects is left and 4,000 of the new ones are Running.

With `--external 0.25`, that share of each part's jobs (the same share of every project's) are
not submitted through the portal but created as a user of another tool would: an indexed
batch/v1 Job of one 1-GPU pod with `schedulerName: allot`, straight on the API server with the
official client, in the project's namespace (`allot-<project>`, made by the benchmark if it is
not there yet). Their pods carry the lab's keep-running label (KWOK would finish them at once)
and a pod failure policy that ignores disruptions (what Kueue's and KAI's users set, so a
reclaimed pod is recreated, not counted as a failure). The figures are the same: all jobs'
pods Running, every old project's pod gone or no longer Running after the reclaim (the Job
controller recreates an evicted pod, which then waits). A part that makes no progress for
`--stall-s` seconds, or is not done in `--timeout`, fails with the counts of both kinds.

For each part: CPU seconds of the web tier, the worker, beat, PostgreSQL, etcd, kube-apiserver,
kube-controller-manager, KWOK and this client, and the worker's cycles (per-stage seconds, from
`GET /api/v1/scheduler/cycles/`); before the fill, each part's CPU per second while idle (500
nodes' heartbeats, beat's cycles, the watches: the baseline inside those figures). The last line
is one JSON object with `running`, `end_to_end_s`, `reclaim_s`, `cpu_s` (the fill's split),
`reclaim_cpu_s`, `idle_cpu_s_per_s`, the cycle figures, `floor` and the ratios `fill_vs_floor`
and `reclaim_vs_fill`.
With `--topology` (issue 38), KAI's topology shape: the lab's nodes are labelled into `--racks`
racks (`allot.io/rack`, `scripts/k8s-lab start --racks`), the portal's pool gets that label as its
level, and every job is one pod of a whole node (`--gpus-per-node` GPUs), as KAI's scale test
places 512 one-pod-per-node jobs on 512 nodes. The fill runs plain first; its jobs are then
deleted and, once their pods are gone, the same jobs of new projects (`topo-*`) are submitted
with `"topology": {"required": "rack"}` and timed the same way (no reclaim): `topology_s` beside
`end_to_end_s`, and their ratio `topology_vs_plain`, measured in one sitting.
Goals (issue 39): single-POST fill at most 1.0x the floor, bulk fill 0.6x, reclaim 1.5x the fill
of the same run and under 90 s on a quiet machine (KAI published 6 min 38 s and 11 min 34 s).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from portal_bench import post_all
from stack import ROOT, Stack, add_shape_arguments, call

from agents.kubernetes.names import namespace_for

LAB = ROOT / "scripts" / "k8s-lab"
LAB_PROCESSES = ("etcd", "kube-apiserver", "kube-controller-manager", "kwok")
FLOOR = "allot-bench/floor"  # on the floor's pods, which the stock kube-scheduler places
FLOOR_PROCESSES = (*LAB_PROCESSES, "kube-scheduler")
DATABASE = "allot_bench_k8s"
REDIS_URL = "redis://127.0.0.1:6379/10"  # a database of its own: the benchmark flushes it
PORT = 18010  # not bench-portal's, so both may run
MANAGED = ("app.kubernetes.io/managed-by", "allot")
EXTERNAL = "allot-bench/external"  # on the external Jobs' pods: the counter knows them by it
KEEP_RUNNING = "allot.io/lab-keep-running"  # KWOK leaves such a Job's pod Running (k8s-lab)
RACK = "allot.io/rack"  # the label `scripts/k8s-lab start --racks` puts on the nodes


def lab(*args: str, timeout: float = 900) -> str:
    done = subprocess.run([sys.executable, str(LAB), *args], capture_output=True, text=True,
                          timeout=timeout, check=False)  # fmt: skip
    if done.returncode:
        raise SystemExit(f"scripts/k8s-lab {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


class PodCounter:
    """Allot's pods and the external Jobs' pods as the API server reports them: a list, then a
    watch that resumes (a 410 relists), in a thread; raw JSON, no model objects (4,000 pods,
    several events each). The lab holds no other pods, so the watch takes every pod and keeps
    those two kinds (a label selector cannot say "either label")."""

    def __init__(self, kubeconfig: Path, projects_of: dict[str, str]):
        from kubernetes import client, config

        self.core = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
        self.projects_of = projects_of  # namespace -> project, for the external pods
        # (namespace, name) -> (project, Running, external)
        self.pods: dict[tuple[str, str], tuple[str, bool, bool]] = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.synced = threading.Event()
        self.thread = threading.Thread(target=self._run, name="pod-counter", daemon=True)

    def start(self) -> PodCounter:
        self.thread.start()
        if not self.synced.wait(60):
            raise SystemExit("could not list the lab's pods")
        return self

    def stop(self) -> None:
        self.stopping.set()

    def count(self, prefix: str, external: bool | None = None) -> tuple[int, int]:
        """(pods, Running pods) of the projects whose name starts with `prefix`: all, or only
        the external Jobs' (`external` True) or Allot's own (False)."""
        with self.lock:
            states = [running for project, running, outside in self.pods.values()
                      if project.startswith(prefix)
                      and external in (None, outside)]  # fmt: skip
        return len(states), sum(states)

    def _state(self, pod: dict) -> tuple[str, bool, bool] | None:
        """(project, Running, external) of one of the two kinds of pods, else None."""
        labels = pod["metadata"].get("labels") or {}
        if FLOOR in labels:  # the floor's: counted under their namespace's name
            return pod["metadata"].get("namespace", ""), _running(pod), True
        if labels.get(MANAGED[0]) == MANAGED[1]:
            return labels.get("allot.io/project", ""), _running(pod), False
        if EXTERNAL in labels:
            project = self.projects_of.get(pod["metadata"].get("namespace", ""), "")
            return project, _running(pod), True
        return None

    def _keep(self, pod: dict) -> None:
        """Record the pod's state (the caller holds the lock)."""
        state = self._state(pod)
        if state is None:
            self.pods.pop(_key(pod), None)
        else:
            self.pods[_key(pod)] = state

    def _list(self) -> str:
        answer = self.core.list_pod_for_all_namespaces(_preload_content=False, _request_timeout=120)
        body = json.loads(answer.data)
        with self.lock:
            self.pods = {}
            for pod in body.get("items") or ():
                self._keep(pod)
        self.synced.set()
        return body["metadata"]["resourceVersion"]

    def _run(self) -> None:
        from kubernetes import watch

        def pods(**kwargs):
            return self.core.list_pod_for_all_namespaces(**kwargs)

        version = None
        while not self.stopping.is_set():
            try:
                version = version or self._list()
                stream = watch.Watch().stream(pods, timeout_seconds=60,
                                              resource_version=version,
                                              allow_watch_bookmarks=True)  # fmt: skip
                for event in stream:
                    pod = event["raw_object"]
                    if event["type"] == "ERROR":  # 410 Gone: list again
                        version = None
                        break
                    version = pod["metadata"]["resourceVersion"]
                    if event["type"] == "BOOKMARK":
                        continue
                    with self.lock:
                        if event["type"] == "DELETED":
                            self.pods.pop(_key(pod), None)
                        else:
                            self._keep(pod)
            except Exception as exc:  # a 410, or the API server gone for a moment
                if self.stopping.is_set():
                    return
                print(f"pod counter: {type(exc).__name__} {str(exc)[:100]}; listing again")
                version = None
                time.sleep(0.5)


def _key(pod: dict) -> tuple[str, str]:
    return pod["metadata"].get("namespace", ""), pod["metadata"]["name"]


def _running(pod: dict) -> bool:
    """Running with every container ready, not being deleted."""
    status = pod.get("status") or {}
    containers = status.get("containerStatuses") or []
    return (status.get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")
            and bool(containers) and all(c.get("ready") for c in containers))  # fmt: skip


def pooled_client(kubeconfig: Path, threads: int):
    """An API client for `threads` client threads: one pooled connection per thread."""
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    configuration.connection_pool_maxsize = threads
    return client.ApiClient(configuration)


class ExternalJobs:
    """Jobs made by another tool: created straight on the API server with the official client,
    each an indexed batch/v1 Job of one 1-GPU pod that asks for Allot by `schedulerName`."""

    def __init__(self, kubeconfig: Path, threads: int):
        from kubernetes import client

        api = pooled_client(kubeconfig, threads)
        self.core, self.batch, self.threads = client.CoreV1Api(api), client.BatchV1Api(api), threads
        self.namespaces: set[str] = set()

    def namespace(self, project: str) -> str:
        """The project's namespace, made if it is not there (a user's namespace exists before
        their workloads; the agent makes the same one for Allot's own pods)."""
        from kubernetes.client.rest import ApiException

        name = namespace_for(project)
        if name not in self.namespaces:
            try:
                self.core.create_namespace({"metadata": {"name": name}}, _preload_content=False)
            except ApiException as error:
                if error.status != 409:
                    raise
            self.namespaces.add(name)
        return name

    def submit(self, jobs: list[dict]) -> None:
        """Create every job's Job (`project`, `name`, `gpus` as the portal's jobs have them);
        any refusal ends the benchmark with the API server's answer."""
        from concurrent.futures import ThreadPoolExecutor

        for project in sorted({job["project"] for job in jobs}):
            self.namespace(project)

        def create(job: dict) -> None:
            self.batch.create_namespaced_job(
                namespace_for(job["project"]), external_job(job), _preload_content=False
            )

        with ThreadPoolExecutor(self.threads) as pool:
            list(pool.map(create, jobs))


def external_job(job: dict) -> dict:
    """The batch/v1 Job of one of the benchmark's jobs, as a PyTorch user writes an indexed
    Job, with a pod failure policy that ignores disruptions (an eviction by a reclaim
    recreates the pod instead of counting against the back-off limit)."""
    gpus = {"nvidia.com/gpu": str(job["gpus"])}
    labels = {EXTERNAL: "true", KEEP_RUNNING: "true"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job["name"], "labels": {EXTERNAL: "true"}},
        "spec": {
            "completionMode": "Indexed",
            "completions": 1,
            "parallelism": 1,
            "podFailurePolicy": {
                "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
            },
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "schedulerName": "allot",
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.example/allot/bench:1",  # KWOK pulls nothing
                            "resources": {"requests": gpus, "limits": gpus},
                        }
                    ],
                },
            },
        },
    }


def split_external(jobs: list[dict], share: float) -> tuple[list[dict], list[dict]]:
    """(through the portal, external): `share` of every project's jobs are external, spread
    over its jobs in order: its k-th job is external when k * share + o crosses a whole number,
    o a fraction that differs between projects, so that a share of a project's few jobs that is
    less than one job still adds up over the projects (2 jobs each at 0.25: every other
    project has one)."""
    portal, external = [], []
    ranks: dict[str, int] = {}
    offsets: dict[str, float] = {}
    for job in jobs:
        project = job["project"]
        offset = offsets.setdefault(project, (len(offsets) * share) % 1)
        k = ranks[project] = ranks.get(project, -1) + 1
        crosses = int((k + 1) * share + offset) > int(k * share + offset)
        (external if crosses else portal).append(job)
    return portal, external


class FloorPods:
    """The floor (issue 39): the same jobs as plain pods created straight on the API server by
    the same number of client threads, for the stock kube-scheduler (`schedulerName` left to its
    default), in namespaces `floor-NNN` of their own; what KAI's scale test compares with."""

    def __init__(self, kubeconfig: Path, threads: int):
        from kubernetes import client

        self.core, self.threads = client.CoreV1Api(pooled_client(kubeconfig, threads)), threads

    def namespaces(self, names: list[str]) -> None:
        """Made, each with its default service account (a pod is refused before it exists)."""
        from kubernetes.client.rest import ApiException

        for name in names:
            try:
                self.core.create_namespace({"metadata": {"name": name}}, _preload_content=False)
            except ApiException as error:
                if error.status != 409:
                    raise

        def accounts() -> bool:
            found = self.core.list_service_account_for_all_namespaces(
                field_selector="metadata.name=default", _preload_content=False
            )
            have = {item["metadata"]["namespace"] for item in json.loads(found.data)["items"]}
            return set(names) <= have

        if wait_until(accounts, 120) is None:
            raise SystemExit("the floor's namespaces never got their service accounts")

    def submit(self, pods: list[tuple[str, str]]) -> float:
        """Create the (namespace, name) pods, one request each from the client threads; the
        seconds it took."""
        from concurrent.futures import ThreadPoolExecutor

        def create(pod: tuple[str, str]) -> None:
            self.core.create_namespaced_pod(pod[0], floor_pod(pod[1]), _preload_content=False)

        start = time.monotonic()
        with ThreadPoolExecutor(self.threads) as pool:
            list(pool.map(create, pods))
        return time.monotonic() - start

    def remove(self, names: list[str]) -> None:
        """Every floor pod deleted at once (no grace: KWOK's nodes run nothing), then the
        namespaces."""
        for name in names:
            self.core.delete_collection_namespaced_pod(
                name, grace_period_seconds=0, _preload_content=False
            )
            self.core.delete_namespace(name, _preload_content=False)


def floor_pod(name: str) -> dict:
    gpus = {"nvidia.com/gpu": "1"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {FLOOR: "true"}},
        "spec": {
            "automountServiceAccountToken": False,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example/allot/bench:1",  # KWOK pulls nothing
                    "resources": {"requests": gpus, "limits": gpus},
                }
            ],
        },
    }


def lab_cpu_seconds(lab_dir: Path, names: tuple[str, ...] = LAB_PROCESSES) -> dict:
    """CPU seconds so far of the lab's processes `names` (0 for one not running) and of this
    client."""
    import psutil

    parts = {}
    for name in names:
        try:
            times = psutil.Process(int((lab_dir / "run" / f"{name}.pid").read_text())).cpu_times()
            parts[name] = times.user + times.system
        except (OSError, ValueError, psutil.NoSuchProcess):
            parts[name] = 0.0
    own = psutil.Process().cpu_times()
    parts["bench_client"] = own.user + own.system
    return parts


def floor_part(lab_dir: Path, counter: PodCounter, args) -> dict:
    """The stock kube-scheduler places the fill's jobs as plain pods on the same lab, before
    Allot's stack runs (its agent would otherwise count them as GPUs used outside Allot); timed
    from the first create until the API server reports them all Running. Then the pods go, the
    lab's nodes are empty again, and the scheduler stops."""
    names = [f"floor-{i:03d}" for i in range(args.projects)]
    pods = [(names[i % args.projects], f"job-{i:05d}") for i in range(args.jobs)]
    client = FloorPods(lab_dir / "admin.kubeconfig", args.threads)
    lab("kube-scheduler", "on", "--dir", str(lab_dir))
    try:
        client.namespaces(names)
        before = lab_cpu_seconds(lab_dir, FLOOR_PROCESSES)
        start = time.monotonic()
        submitted = client.submit(pods)
        print(f"floor: created {len(pods)} pods in {submitted:.1f} s")
        seen = {"state": counter.count("floor-"), "at": time.monotonic()}

        def done() -> bool:
            state = counter.count("floor-")
            if state != seen["state"]:
                seen.update(state=state, at=time.monotonic())
            return state[1] >= len(pods) or time.monotonic() - seen["at"] > args.stall_s

        wait_until(done, args.timeout)
        end = time.monotonic()
        after = lab_cpu_seconds(lab_dir, FLOOR_PROCESSES)
        running = counter.count("floor-")[1]
    finally:
        client.remove(names)
        if wait_until(lambda: counter.count("floor-")[0] == 0, 300) is None:
            print(f"floor: {counter.count('floor-')[0]} pods still there after 300 s")
        lab("kube-scheduler", "off", "--dir", str(lab_dir))
    cpu = {part: round(after[part] - before[part], 1) for part in after}
    print(f"floor: {running}/{len(pods)} pods Running after {end - start:.1f} s "
          f"(the stock kube-scheduler); CPU seconds {cpu}")  # fmt: skip
    return {
        "scheduler": "kube-scheduler (stock settings, the lab's pinned Kubernetes)",
        "done": running >= len(pods),
        "running": running,
        "submit_s": round(submitted, 2),
        "elapsed_s": round(end - start, 2),
        "cpu_s": cpu,
    }


class CycleLog:
    """The worker's cycles, one entry each, read from `GET /api/v1/scheduler/cycles/` (`last`)
    every half second while running."""

    def __init__(self, base: str, token: str):
        self.base, self.token = base, token
        self.entries: dict[float, dict] = {}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="cycle-log", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopping.wait(0.5):
            try:
                last = call(self.base, self.token, "GET", "/api/v1/scheduler/cycles/")["last"]
            except OSError:
                continue
            if last:
                self.entries[last["at"]] = last

    def between(self, start: float, end: float) -> dict:
        """Cycles that ended in [start, end] (wall clock): count, seconds per stage summed,
        the slowest cycle's stages."""
        chosen = [e for at, e in sorted(self.entries.items()) if start <= at <= end]
        stages = ("observe_s", "lock_s", "snapshot_s", "plan_s", "commit_s", "carry_out_s")
        total = {s: round(sum(e.get(s, 0.0) for e in chosen), 2) for s in stages}
        slowest = max(chosen, key=lambda e: sum(e.get(s, 0.0) for s in stages), default=None)
        return {
            "cycles_seen": len(chosen),
            "stage_s_total": total,
            "slowest": {s: round(slowest.get(s, 0.0), 2) for s in stages} if slowest else None,
        }


def cpu_seconds(stack: Stack, lab_dir: Path) -> dict:
    """CPU seconds so far of the stack's parts, the lab's processes and this client; PostgreSQL
    per process (`spent` counts the backends that were there before from where they were)."""
    import psutil

    parts = stack.cpu_seconds() | lab_cpu_seconds(lab_dir)
    postgres = {}
    for process in psutil.process_iter(["name", "cpu_times"]):
        if process.info["name"] == "postgres" and process.info["cpu_times"]:
            postgres[process.pid] = (
                process.info["cpu_times"].user + process.info["cpu_times"].system
            )
    parts["postgres"] = postgres
    return parts


def spent(before: dict, after: dict) -> dict:
    """CPU seconds between two `cpu_seconds`, per part, and the totals of Allot (web, worker,
    beat, PostgreSQL) and of the control plane (etcd, kube-apiserver, kube-controller-manager,
    KWOK). PostgreSQL's backends that ended meanwhile are not counted."""
    cpu = {part: after[part] - before[part] for part in after if part != "postgres"}
    old = before["postgres"]
    cpu["postgres"] = sum(t - old.get(pid, 0.0) for pid, t in after["postgres"].items())
    allot = sum(cpu[p] for p in ("web", "worker", "beat", "postgres"))
    control = sum(cpu[p] for p in LAB_PROCESSES)
    cpu |= {"allot_total": allot, "control_plane_total": control}
    return {part: round(seconds, 1) for part, seconds in cpu.items()}


def idle_cpu(stack: Stack, lab_dir: Path, seconds: float) -> dict:
    """CPU seconds per second of each part while nothing is asked of it: the lab's nodes'
    heartbeats, beat's cycles, the watches (the baseline within the parts' figures)."""
    before = cpu_seconds(stack, lab_dir)
    time.sleep(seconds)
    cpu = spent(before, cpu_seconds(stack, lab_dir))
    return {part: round(value / seconds, 2) for part, value in cpu.items()}


def wait_until(check, timeout: float, every: float = 0.25) -> float | None:
    """Poll `check` until true; the monotonic time it became true (None after `timeout`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return time.monotonic()
        time.sleep(every)
    return None


def portal_running(stack: Stack, token: str) -> int:
    return call(stack.base, token, "GET", "/api/v1/jobs/?status=Running&page_size=1")["count"]


def submit(stack: Stack, token: str, jobs: list[dict], external: ExternalJobs | None,
           args) -> float:  # fmt: skip
    """POST every job (one each, or sweeps of `--bulk`), and at the same time create the
    external share's Jobs on the API server; the seconds it took."""
    portal, outside = split_external(jobs, args.external) if external else (jobs, [])
    if args.bulk:
        path = "/api/v1/jobs/bulk/"
        bodies = [{"jobs": portal[i : i + args.bulk]} for i in range(0, len(portal), args.bulk)]
    else:
        path, bodies = "/api/v1/jobs/", portal
    start = time.monotonic()
    failed: list[BaseException] = []

    def create_external() -> None:
        try:
            external.submit(outside)
        except BaseException as error:  # said below, in the benchmark's thread
            failed.append(error)

    thread = threading.Thread(target=create_external, name="external-jobs")
    if outside:
        thread.start()
    post_all(stack.base, token, path, bodies, args.threads)
    if outside:
        thread.join()
    if failed:
        raise SystemExit(f"creating the external Jobs failed: {failed[0]}")
    return time.monotonic() - start


def phase(name: str, stack: Stack, token: str, lab_dir: Path, cycles: CycleLog, jobs,
          cluster_done, portal_done, progress, external, args) -> dict:  # fmt: skip
    """Submit `jobs`, wait until `cluster_done()` (the API server's pods) and `portal_done()`
    (the portal's rows); the figures of the part, times from the first POST. The wait ends
    early when `progress()` (the cluster's state, any value) has not changed for `--stall-s`."""
    before, wall = cpu_seconds(stack, lab_dir), time.time()
    start = time.monotonic()
    submitted = submit(stack, token, jobs, external, args)
    print(
        f"{name}: submitted {len(jobs)} jobs in {submitted:.1f} s ({len(jobs) / submitted:.0f}/s)"
    )
    at: dict[str, float] = {}
    seen = {"state": progress(), "at": time.monotonic()}

    def done() -> bool:
        for what, check in (("cluster", cluster_done), ("portal", portal_done)):
            if what not in at and check():
                at[what] = time.monotonic()
        state = progress()
        if state != seen["state"]:
            seen.update(state=state, at=time.monotonic())
        return len(at) == 2 or time.monotonic() - seen["at"] > args.stall_s

    wait_until(done, args.timeout)
    if "cluster" not in at:
        stalled = time.monotonic() - seen["at"] > args.stall_s
        why = f"no change for {args.stall_s:.0f} s" if stalled else f"{args.timeout:.0f} s"
        print(f"{name}: NOT DONE ({why}); pods (all, Running) {progress()}")
    end = at.get("cluster", time.monotonic())
    after = cpu_seconds(stack, lab_dir)  # the cluster's time is the figure: CPU until then
    return {
        "done": "cluster" in at,
        "submit_s": round(submitted, 2),
        "elapsed_s": round(end - start, 2),
        "portal_s": round(at["portal"] - start, 2) if "portal" in at else None,
        "cpu_s": spent(before, after),
        "cycles": cycles.between(wall, time.time()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_shape_arguments(parser)
    parser.add_argument("--threads", type=int, default=8, help="client threads")
    parser.add_argument("--bulk", type=int, default=0,
                        help="jobs per request through jobs/bulk/ (0: one POST a job)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=600, help="per part, seconds")
    parser.add_argument("--no-reclaim", action="store_true", help="the fill only")
    parser.add_argument("--idle-s", type=float, default=20,
                        help="seconds of idle CPU measured before the fill")  # fmt: skip
    parser.add_argument("--keep-lab", action="store_true", help="leave the lab running")
    parser.add_argument("--external", type=float, default=0.0, metavar="SHARE",
                        help="share of the jobs created as indexed Jobs on the API server "
                             "(schedulerName allot) instead of through the portal")  # fmt: skip
    parser.add_argument("--stall-s", type=float, default=240,
                        help="a part fails when its pods have not changed so long")  # fmt: skip
    parser.add_argument("--no-floor", action="store_true",
                        help="skip the stock kube-scheduler's run of the jobs first")  # fmt: skip
    parser.add_argument("--topology", action="store_true",
                        help="KAI's topology shape: one-pod-per-node jobs, plain then with "
                        "required: rack (see the module docstring)")  # fmt: skip
    parser.add_argument("--racks", type=int, default=16,
                        help="with --topology, racks the nodes are labelled into")  # fmt: skip
    args = parser.parse_args(argv)
    if not 0 <= args.external <= 1:
        parser.error("--external: a share from 0 to 1")
    if args.topology and (args.external or args.racks < 1):
        parser.error("--topology: with --racks of at least 1 and no --external")
    if args.topology:
        args.no_reclaim = True  # the topology part takes the reclaim's place

    lab_dir = Path(tempfile.mkdtemp(prefix="allot-k8s-bench-lab-"))
    started = time.monotonic()
    racks = ("--racks", str(args.racks)) if args.topology else ()
    print(lab("start", "--dir", str(lab_dir), "--nodes", str(args.nodes),
              "--gpus-per-node", str(args.gpus_per_node),
              *racks).strip().splitlines()[0])  # fmt: skip
    kubeconfig = lab_dir / "admin.kubeconfig"
    env = {"ALLOT_AGENT": "kubernetes", "KUBECONFIG": str(kubeconfig)}
    stack = Stack(DATABASE, REDIS_URL, web=args.web, port=PORT, env=env)
    counter = cycles = None
    names = [f"project-{i:03d}" for i in range(args.projects)]
    names += [f"owner-{i:03d}" for i in range(args.projects // 2)]  # the reclaim's
    names += [f"topo-{i:03d}" for i in range(args.projects)]  # the topology part's
    projects_of = {namespace_for(name): name for name in names}
    external = ExternalJobs(kubeconfig, args.threads) if args.external else None
    floor = topology = None
    try:
        counter = PodCounter(kubeconfig, projects_of).start()
        if not args.no_floor:
            floor = floor_part(lab_dir, counter, args)
        token = stack.start()
        cycles = CycleLog(stack.base, token)

        def nodes_seen() -> bool:  # the worker's cycles read the inventory into node rows
            return (
                call(stack.base, token, "GET", "/api/v1/nodes/?page_size=1")["count"] >= args.nodes
            )

        if wait_until(nodes_seen, 120) is None:
            raise SystemExit(f"the portal never saw the lab's {args.nodes} nodes")
        print(f"lab and stack ready in {time.monotonic() - started:.0f} s")
        idle = idle_cpu(stack, lab_dir, args.idle_s)
        print(f"idle: CPU seconds per second {idle}")
        total = args.nodes * args.gpus_per_node
        quota = total / args.projects
        projects = [{"name": f"project-{i:03d}", "quota": quota} for i in range(args.projects)]
        post_all(stack.base, token, "/api/v1/projects/", projects, args.threads)
        if args.topology:  # the pool's level, set before both fills: only the constraint differs
            call(stack.base, token, "POST", "/api/v1/topology/",
                 {"pool": "default", "levels": [RACK]})  # fmt: skip

        gpus = args.gpus_per_node if args.topology else 1  # one pod per node
        jobs = [{"project": f"project-{i % args.projects:03d}", "name": f"job-{i:05d}",
                 "gpus": gpus} for i in range(args.jobs)]  # fmt: skip
        fill = phase("fill", stack, token, lab_dir, cycles, jobs,
                     lambda: counter.count("project-")[1] >= args.jobs,
                     lambda: portal_running(stack, token) >= args.jobs,
                     lambda: counter.count("project-"), external, args)  # fmt: skip
        running = counter.count("project-")[1]
        external_running = counter.count("project-", external=True)
        print(f"fill: {running}/{args.jobs} pods Running (API server) after "
              f"{fill['elapsed_s']:.1f} s (goal < 60 s); in the portal after "
              f"{fill['portal_s']} s")  # fmt: skip
        if external:
            print(f"fill: external Jobs' pods {external_running[1]}/{external_running[0]} "
                  "Running")  # fmt: skip
        print(f"fill: CPU seconds {fill['cpu_s']}")
        print(f"fill: cycles {fill['cycles']}")

        reclaim = None
        if not args.no_reclaim and fill["done"]:
            reclaim = reclaim_part(stack, token, lab_dir, cycles, counter, external, args)
        if args.topology and fill["done"]:
            topology = topology_part(stack, token, lab_dir, cycles, counter, jobs, args)
    finally:
        if cycles is not None:
            cycles.stopping.set()
        if counter is not None:
            counter.stop()
        stack.stop()
        if args.keep_lab:
            print(f"lab left running: KUBECONFIG={kubeconfig}")
        else:
            lab("clean", "--dir", str(lab_dir))
            shutil.rmtree(lab_dir, ignore_errors=True)

    summary = {
        "idle_cpu_s_per_s": idle,
        "nodes": args.nodes, "gpus_per_node": args.gpus_per_node, "projects": args.projects,
        "jobs": args.jobs, "bulk": args.bulk, "web_processes": args.web,
        "external": args.external, "external_pods": external_running[0],
        "external_running": external_running[1],
        "running": running, "submit_s": fill["submit_s"], "end_to_end_s": fill["elapsed_s"],
        "portal_running_s": fill["portal_s"], "cpu_s": fill["cpu_s"], "cycles": fill["cycles"],
        "reclaim_s": reclaim["elapsed_s"] if reclaim else None,
        "reclaim_portal_s": reclaim["portal_s"] if reclaim else None,
        "reclaimed": reclaim["reclaimed"] if reclaim else None,
        "reclaim_running": reclaim["running"] if reclaim else None,
        "reclaim_submit_s": reclaim["submit_s"] if reclaim else None,
        "reclaim_cpu_s": reclaim["cpu_s"] if reclaim else None,
        "reclaim_cycles": reclaim["cycles"] if reclaim else None,
        "floor": floor,
        "racks": args.racks if args.topology else None,
        "topology_s": topology["elapsed_s"] if topology else None,
        "topology_portal_s": topology["portal_s"] if topology else None,
        "topology_running": topology["running"] if topology else None,
        "topology_racks_ok": topology["racks_ok"] if topology else None,
        "topology_cpu_s": topology["cpu_s"] if topology else None,
        "topology_cycles": topology["cycles"] if topology else None,
        "topology_vs_plain": ratio(topology["elapsed_s"], fill["elapsed_s"]) if topology
        else None,
        # the goals of issue 39 are these ratios, measured in one sitting
        "fill_vs_floor": ratio(fill["elapsed_s"], floor["elapsed_s"]) if floor else None,
        "reclaim_vs_fill": ratio(reclaim["elapsed_s"], fill["elapsed_s"]) if reclaim else None,
    }  # fmt: skip
    print(json.dumps(summary))
    ok = running == args.jobs and (args.no_reclaim or bool(reclaim and reclaim["done"]))
    ok = ok and (args.no_floor or bool(floor and floor["done"]))
    ok = ok and (not args.topology or bool(topology and topology["done"]
                                            and topology["racks_ok"]))  # fmt: skip
    return 0 if ok else 1


def ratio(allot_s: float, other_s: float) -> float | None:
    return round(allot_s / other_s, 2) if other_s else None


def reclaim_part(stack: Stack, token: str, lab_dir: Path, cycles: CycleLog,
                 counter: PodCounter, external: ExternalJobs | None, args) -> dict:  # fmt: skip
    """The old projects drop to quota 0; half as many new ones of twice the quota ask for it."""
    owners = args.projects // 2
    quota = args.nodes * args.gpus_per_node / owners
    zero = [{"name": f"project-{i:03d}", "quota": 0} for i in range(args.projects)]
    post_all_patch(stack, token, zero, args.threads)
    new = [{"name": f"owner-{i:03d}", "quota": quota} for i in range(owners)]
    post_all(stack.base, token, "/api/v1/projects/", new, args.threads)
    jobs = [{"project": f"owner-{i % owners:03d}", "name": f"claim-{i:05d}", "gpus": 1}
            for i in range(int(quota) * owners)]  # fmt: skip
    held = counter.count("project-")[0]

    def reclaimed() -> bool:
        """Allot's old pods gone, the external Jobs' old pods not Running (their controller
        makes them again, and they wait), every new pod Running."""
        return (
            counter.count("project-", external=False)[0] == 0
            and counter.count("project-", external=True)[1] == 0
            and counter.count("owner-")[1] >= len(jobs)
        )

    def progress() -> tuple:
        return counter.count("project-"), counter.count("owner-")

    def portal_reclaimed() -> bool:
        return portal_running(stack, token) == len(jobs)  # the old jobs wait, Pending

    part = phase("reclaim", stack, token, lab_dir, cycles, jobs, reclaimed, portal_reclaimed,
                 progress, external, args)  # fmt: skip
    left = counter.count("project-", external=False)[0] + counter.count("project-", True)[1]
    running = counter.count("owner-")[1]
    print(f"reclaim: {held - left} of {held} borrowed pods deleted, {running}/{len(jobs)} new "
          f"pods Running after {part['elapsed_s']:.1f} s (goal < 90 s); in the portal after "
          f"{part['portal_s']} s")  # fmt: skip
    print(f"reclaim: CPU seconds {part['cpu_s']}")
    print(f"reclaim: cycles {part['cycles']}")
    return {**part, "reclaimed": held - left, "running": running}


def topology_part(stack: Stack, token: str, lab_dir: Path, cycles: CycleLog,
                  counter: PodCounter, plain: list[dict], args) -> dict:  # fmt: skip
    """The plain fill's jobs deleted (not timed: until their pods are gone), then the same jobs
    of the `topo-*` projects with `required: rack`, timed as the fill."""
    from concurrent.futures import ThreadPoolExecutor

    def delete(job: dict) -> None:
        call(stack.base, token, "DELETE", f"/api/v1/jobs/{job['project']}/{job['name']}/")

    with ThreadPoolExecutor(args.threads) as pool:
        list(pool.map(delete, plain))
    if wait_until(lambda: counter.count("project-")[0] == 0, args.timeout) is None:
        raise SystemExit(f"the plain fill's pods are not gone: {counter.count('project-')}")
    projects = [{"name": f"topo-{i:03d}", "quota": args.nodes * args.gpus_per_node
                 / args.projects} for i in range(args.projects)]  # fmt: skip
    post_all(stack.base, token, "/api/v1/projects/", projects, args.threads)
    jobs = [{**job, "project": job["project"].replace("project-", "topo-"),
             "topology": {"required": "rack"}} for job in plain]  # fmt: skip
    part = phase("topology", stack, token, lab_dir, cycles, jobs,
                 lambda: counter.count("topo-")[1] >= len(jobs),
                 lambda: portal_running(stack, token) >= len(jobs),
                 lambda: counter.count("topo-"), None, args)  # fmt: skip
    running = counter.count("topo-")[1]
    print(f"topology: {running}/{len(jobs)} one-pod-per-node jobs with required: rack Running "
          f"after {part['elapsed_s']:.1f} s (KAI: 512 on 512 nodes in 48.7 s); in the portal "
          f"after {part['portal_s']} s")  # fmt: skip
    print(f"topology: CPU seconds {part['cpu_s']}")
    print(f"topology: cycles {part['cycles']}")
    return {**part, "running": running, "racks_ok": racks_ok(stack, token, len(jobs))}


def racks_ok(stack: Stack, token: str, count: int) -> bool:
    """Every topology job says it landed in one rack (its REST `domain`): the shape was placed
    by the constraint, not merely fast."""
    page = call(stack.base, token, "GET", "/api/v1/jobs/?status=Running&page_size=1000")
    landed = [job for job in page["results"] if job["project"].startswith("topo-")
              and job["domain"].startswith("rack ")]  # fmt: skip
    print(f"topology: {len(landed)}/{count} jobs report a rack as their domain")
    return len(landed) >= count


def post_all_patch(stack: Stack, token: str, projects: list[dict], threads: int) -> None:
    """PATCH each project's quota."""
    from concurrent.futures import ThreadPoolExecutor

    def patch(body: dict) -> None:
        call(stack.base, token, "PATCH", f"/api/v1/projects/{body['name']}/",
             {"quota": body["quota"]})  # fmt: skip

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(patch, projects))


if __name__ == "__main__":
    sys.exit(main())
