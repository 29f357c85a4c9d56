"""`KubernetesAgent`: the agent interface carried out on a real cluster with the official client.

- `start` creates and binds a job's pods all or nothing (`pods.start_job`), then its Service and
  Ingress. `stop` deletes the job's pods (with the configured grace period), Service and Ingress.
  A start with a new placement (a consolidation move) deletes the old pods and starts the job
  again once the watch shows them gone.
- `carry_out` takes a cycle's stops and starts at once and carries them out `concurrency` jobs
  at a time (stops first): each costs a round trip or two to the API server, and one after
  another they made a fill of 4,000 jobs take minutes (`make bench-k8s`). A stop deletes what the
  job's spec says it has, by name (`pods.stop_job`); a project's namespace is created once.
- Failures are judged per job (`faults`): one job's start or stop that fails never holds up
  another's. A transient failure (429, 5xx, old pods still terminating) backs that job off
  (1 s doubling to `max_backoff_s`); a namespace still being set up is retried quickly for a
  while; a permanent one (another 4xx) fails a start with the API's message, and a stop is
  given up, logged, and left to the sweep. Only when the API server cannot be reached at all
  (or refuses the credentials) does the whole agent back off, and `problem` says so: the portal
  keeps planning from the database and owed starts and stops are carried out when it answers.
- `observe` reads the nodes (every `node_refresh_s`), the pods from the watch cache
  (`watch.PodWatcher`: list, watch, relist on 410 Gone), GPU utilization from the DCGM exporter
  when one is configured, frees reservation pods no fractional pod uses any more, and every
  `sweep_interval_s` reconciles Services, Ingresses and pods both ways (`sweep`). A started
  job whose pods vanished (all of them, or one of a gang) is Failed with that reason; a job
  this agent does not run whose pods are not all created and bound (its process died in the
  middle of starting it) is not reported, so the portal starts it again if it holds it.
- `logs` reads the first pod's log (`read_namespaced_pod_log`); `urls` gives the Ingress URL of
  `service_type=ingress` jobs, the node or load balancer address of NodePort and LoadBalancer
  ones (`addresses`), else the Service's in-cluster address.
- `sessions` finds Launch Jupyter's notebook pods for the portal's session proxy
  (`sessions.KubernetesSessions`); `open_shell` opens a terminal in a job's first pod through
  the exec stream (`shell`, `allot bash`).

The agent keeps no state the database cannot rebuild: after a restart, the cycle starts again
every job the database says is placed, and creating what exists (409) counts as done.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from agents.base import AgentCounts, JobKey, JobSpec, JobStatus, NodeStatus, Observation
from agents.kubernetes import addresses, adopt, dcgm, external, faults, manifests, pods, sweep
from agents.kubernetes.inventory import KubernetesConfig, api_client, inventory
from agents.kubernetes.sessions import KubernetesSessions
from agents.kubernetes.shell import ExecShell, open_shell
from agents.kubernetes.status import complete, job_status
from agents.kubernetes.telemetry import Tally
from agents.kubernetes.watch import PodWatcher

logger = logging.getLogger(__name__)

RESERVATION_GRACE_S = 30.0  # a reservation unused this long is deleted
SETUP_FIRST_WAIT_S = 0.5  # the first per-job wait for a namespace still being set up
HELD_RETRY_S = 1.0  # a start whose device a going pod still holds is tried again this often
VACATE_WAIT_S = 2.0  # how long starts wait for the pods of the cycle's stops to go (issue 40)
VACATE_BATCH_S = 0.02  # after a change of the watch, for more deletions to arrive with it
GOING_SLACK_S = 30.0  # a stopped job's pods unreported past their grace period by this much


def utc_now() -> datetime:
    return datetime.now(UTC)


class Unreachable(Exception):
    """The API server cannot be reached (or refuses the credentials): try again later."""


class KubernetesAgent:
    """Allot's plan as pods on a Kubernetes cluster (see the module docstring)."""

    simulated = False
    supports_shell = True

    def __init__(self, config: KubernetesConfig, clock: Callable[[], datetime] = utc_now,
                 monotonic: Callable[[], float] = time.monotonic):  # fmt: skip
        self.config = config
        self.tally = Tally()  # failed API calls and back-offs, for the portal's metrics
        self.api = api_client(config, self.tally)
        self.sessions = KubernetesSessions(
            config.session_secret, self.api, config.workspace_size, config.workspace_storage_class
        )
        self.clock = clock
        self.monotonic = monotonic
        self.watcher = PodWatcher(self.api, config.watch_timeout_s, config.max_backoff_s,
                                  self.tally)  # fmt: skip
        self._lock = threading.RLock()
        self._specs: dict[JobKey, JobSpec] = {}  # every job this agent was told to run
        self._unstarted: dict[JobKey, JobSpec] = {}  # starts still to do (or to retry)
        self._moving: dict[JobKey, JobSpec] = {}  # waiting for the old pods to go
        self._unstopped: set[JobKey] = set()  # stops still to do (or to retry)
        self._stopping: dict[JobKey, JobSpec | None] = {}  # what each owed stop deletes
        self._going: dict[JobKey, float] = {}  # stopped here, pods maybe terminating (when)
        self._refused: dict[JobKey, str] = {}  # starts (or moves) the API rejected for good
        self._stop_refused: dict[JobKey, float] = {}  # when a stop was rejected for good
        self._retries = faults.Backoff(  # per job
            monotonic, config.max_backoff_s, lambda wait_s: self.tally.backed_off("job", wait_s)
        )
        self._started_at: dict[JobKey, float] = {}
        self._last: dict[JobKey, JobStatus] = {}
        self._nodes: tuple[NodeStatus, ...] = ()
        self._nodes_at = float("-inf")
        self._unused_since: dict[tuple[str, str], float] = {}
        self._orphans = sweep.Orphans(config.orphan_grace_s, monotonic)
        self._swept_at = float("-inf")
        self._failures = 0
        self._retry_at = float("-inf")
        self._namespaces = pods.Namespaces()  # those known to exist: created once
        self._pool: ThreadPoolExecutor | None = None  # carries out several jobs at once
        self._owners = external.Owners(self.api, monotonic=monotonic)  # issue 33
        self._members: dict[str, str] = {}  # external pod uid -> its workload's uid
        self._told: dict[str, str] = {}  # external pod uid -> what `explain` last told it
        self._suspended = True  # Jobs suspended to evict their pods may wait (`adopt.resume`);
        # True at first: an agent that stopped in between may have left one
        self.problem = ""  # why the cluster cannot be seen ("" when it can)

    # ------------------------------------------------------------------ back-off (whole agent)
    def _backing_off(self) -> bool:
        return self.monotonic() < self._retry_at

    def _failed(self, exc: Exception) -> None:
        """Back the whole agent off. The up to `concurrency` requests in flight when the server
        goes away fail together: a failure while the agent already waits is the same outage and
        leaves the wait as it is (doubling once per thread made 16 threads wait 60 s at once,
        and a 5.5 s outage cost a minute of Pending pods, issue 40). Each new attempt that
        fails after the wait doubles it."""
        with self._lock:
            now = self.monotonic()
            wait = min(2.0 ** (self._failures - 1), self.config.max_backoff_s)
            if now >= self._retry_at:
                self._failures += 1
                wait = min(2.0 ** (self._failures - 1), self.config.max_backoff_s)
                self._retry_at = now + wait
                self.tally.backed_off("agent", wait)
        what = "failing" if isinstance(exc, ApiException) else "unreachable"
        message = faults.describe(exc)
        self.problem = f"Kubernetes API server {what}: {message}; retrying in {wait:g} s"
        logger.warning("%s", self.problem)

    def _reached(self) -> None:
        self._failures, self._retry_at, self.problem = 0, float("-inf"), ""

    # ------------------------------------------------------------------ the interface
    def start(self, job: JobSpec) -> None:
        """Run `job` (idempotent); a new placement of a known job moves it."""
        self.carry_out((), (job,))

    def stop(self, project: str, name: str) -> None:
        """Delete the job's pods, Service and Ingress; forget it. A stop the API refused for
        good is not tried again before `max_backoff_s` has passed."""
        self.carry_out(((project, name),), ())

    def carry_out(self, stops: Iterable[JobKey], starts: Iterable[JobSpec]) -> None:
        """`stop` each of `stops` and `start` each of `starts`, carried out together: the stops
        first, `config.concurrency` jobs at a time, then the starts."""
        self.watcher.start()
        with self._lock:
            for key in stops:
                self._owe_stop(key)
            for job in starts:
                self._owe_start(job)
        self._carry_on()

    def _owe_start(self, job: JobSpec) -> None:
        old = self._specs.get(job.key)
        self._going.pop(job.key, None)
        self._specs[job.key] = job
        self._refused.pop(job.key, None)
        if old != job:
            self._retries.clear(job.key)  # a new spec is tried at once
        if old is not None and old.placement != job.placement and job.key in self._started_at:
            self._moving[job.key] = job
            self._unstarted.pop(job.key, None)
            self._unstopped.add(job.key)
            self._owe_deletion(job.key, old)  # the old placement's pods go
        else:
            self._unstarted[job.key] = job

    def _owe_stop(self, key: JobKey) -> None:
        spec = self._specs.get(key)
        for table in (self._specs, self._unstarted, self._moving, self._refused,
                      self._started_at, self._last):  # fmt: skip
            table.pop(key, None)
        self._retries.clear(key)
        refused_at = self._stop_refused.get(key)
        if refused_at is None or self.monotonic() - refused_at >= self.config.max_backoff_s:
            self._unstopped.add(key)
            self._owe_deletion(key, spec)

    def _owe_deletion(self, key: JobKey, spec: JobSpec | None) -> None:
        """What the owed stop of `key` deletes: `spec`'s objects by name; by label (None) when
        the spec is not known here, or when a stop of another spec is still owed."""
        if key in self._stopping and self._stopping[key] != spec:
            spec = None
        self._stopping[key] = spec

    def observe(self) -> Observation:
        """Every job this agent runs or sees, and the GPU nodes (see the module docstring)."""
        self.watcher.start()
        if not self._backing_off():  # a fresh agent's first view waits for the first list
            self.watcher.synced.wait(min(10, self.config.watch_timeout_s))
        now = self.clock()
        if self._backing_off():
            return self._observation(now, self._nodes_offline())
        try:
            if self.monotonic() - self._nodes_at >= self.config.node_refresh_s:
                self._nodes = tuple(inventory(self.api, self.config))
                self._nodes_at = self.monotonic()
            self._catch_up()
            self._resume()
            self._free_reservations()
            self._sweep()
        except Unreachable:
            return self._observation(now, self._nodes_offline())
        except Exception as exc:
            if not isinstance(exc, ApiException) and faults.kind(exc) == "permanent":
                raise  # not the cluster's doing: a fault of Allot's own, to be seen
            self._failed(exc)  # the nodes or a listing cannot be read: nothing is known
            return self._observation(now, self._nodes_offline())
        self._reached()
        if self.watcher.error:
            self.watcher.wake()  # the API answers again: the watch need not wait out its back-off
        if self.watcher.error and not self.problem:
            self.problem = f"Kubernetes pod watch: {self.watcher.error}"
        usage = self._utilization()
        return self._observation(now, self._nodes, usage)

    def status(self, job: JobSpec) -> JobStatus:
        """The job's status now, read from the API (the web process has no watch of its own)."""
        try:
            answer = client.CoreV1Api(self.api).list_namespaced_pod(
                _namespace(job),
                label_selector=pods.selector(job.project, job.name),
                _request_timeout=5,
            )
        except Exception as exc:
            message = faults.describe(exc)
            return JobStatus(job.project, job.name, "ContainerCreating", message=message)
        found = [self.api.sanitize_for_serialization(pod) for pod in answer.items]
        status = job_status(job.project, job.name, found)
        usage = self._utilization()
        if usage is not None:
            names = [pod["metadata"]["name"] for pod in found]
            status = replace(
                status,
                utilization=usage.job(_namespace(job), names),
                gpu_memory_used_bytes=usage.job_memory(_namespace(job), names),
            )
        return status

    def explain(self, waiting: Mapping[str, str]) -> None:
        """Tell each unbound pod of the waiting external workloads why it waits (`adopt`):
        an Event and its PodScheduled condition, when the text changes."""
        if not waiting or self._backing_off():
            return
        try:
            adopt.explain(self.api, waiting, self.watcher.all(), self._members, self._told)
        except Exception as exc:
            with contextlib.suppress(Unreachable):
                self._tolerate("explaining why external workloads wait", exc)
        live = {pod["metadata"].get("uid") for pod in self.watcher.all()}
        for uid in [uid for uid in self._told if uid not in live]:
            del self._told[uid]

    def logs(self, job: JobSpec, tail: int = 200) -> list[str]:
        """The last `tail` lines of the first pod's log (empty before its container starts)."""
        try:
            name, container = self._first_pod(job)
            if not name:
                return []
            answer = client.CoreV1Api(self.api).read_namespaced_pod_log(
                name, _namespace(job), container=container, tail_lines=tail,
                _request_timeout=10, _preload_content=False,
            )  # fmt: skip
            text = answer.data.decode("utf-8", "replace")
        except ApiException as exc:
            if exc.status in (400, 404):  # not started yet, or gone
                return []
            return [f"(logs unavailable: {faults.describe(exc)})"]
        except Exception as exc:
            return [f"(logs unavailable: {faults.describe(exc)})"]
        return text.splitlines()[-tail:] if tail else []

    def _first_pod(self, job: JobSpec) -> tuple[str, str | None]:
        """(name, container) of the job's first pod: by name for Allot's own; an external
        one's by its labels (its first container)."""
        if job.external is None:
            return manifests.pod_name(job, 0), "main"
        answer = client.CoreV1Api(self.api).list_namespaced_pod(
            job.external.namespace, label_selector=pods.selector(job.project, job.name)
            + ",allot.io/pod-index=0", _request_timeout=10)  # fmt: skip
        if not answer.items:
            return "", None
        return answer.items[0].metadata.name, answer.items[0].spec.containers[0].name

    def urls(self, job: JobSpec) -> list[dict]:
        """The Ingress URL of each port of an ingress job; the node's (or load balancer's)
        address of a NodePort (LoadBalancer) job once known; else the Service's address."""
        if job.service_type == "ingress" and self.config.ingress_host:
            return manifests.ingress_urls(job, self.config.ingress_host,
                                          self.config.ingress_scheme)  # fmt: skip
        if job.service_type in manifests.SERVICE_TYPES:
            try:
                found = addresses.service_urls(self.api, job, self.config.nodeport_host)
            except Exception as exc:
                logger.info("URLs of %s/%s: %s", job.project, job.name, faults.describe(exc))
                found = []
            if found:
                return found
        namespace = manifests.namespace_for(job.project)
        return [{"port": port, "url": f"http://{job.name}.{namespace}.svc:{port}",
                 "in_cluster": True} for port in job.ports]  # fmt: skip

    def open_shell(self, job: JobSpec) -> ExecShell:
        """A terminal in the job's first pod through the exec stream (`allot bash`); an
        external job's first pod is found by its labels."""
        if job.external is None:
            return open_shell(self.api, job)
        name, container = self._first_pod(job)
        if not name:
            raise ApiException(status=404, reason=f"job {job.project}/{job.name} has no pod yet")
        return open_shell(self.api, job, where=(job.external.namespace, name, container))

    def take_counts(self) -> AgentCounts:
        """The failed API calls and back-offs since the last call (`telemetry`)."""
        return self.tally.take()

    def close(self) -> None:
        """Stop watching (and the threads that carry jobs out)."""
        self.watcher.stop()
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    # ------------------------------------------------------------------ carrying out
    def _carry_on(self) -> None:
        """Carry out what is owed now, unless the whole agent is backing off."""
        if not self._backing_off():
            with contextlib.suppress(Unreachable):
                self._catch_up()

    def _catch_up(self) -> None:
        """Do the stops, moves and starts owed whose job is not backing off, each on its own:
        one job's failure is that job's (`_stop_failed`, `_start_failed`). Raise Unreachable,
        leaving the rest owed, only when the API server cannot be reached at all."""
        with self._lock:
            stops = sorted(key for key in self._unstopped if self._retries.due(key))
        self._each(self._stop_one, stops)
        cached = {_job_key(pod) for pod in self.watcher.snapshot()}
        with self._lock:
            for key in [key for key in self._moving if key not in cached]:
                self._unstarted[key] = self._moving.pop(key)
            starts = [job for key, job in self._unstarted.items()
                      if key not in self._unstopped and self._retries.due(key)]  # fmt: skip
        if starts and not self._nodes:
            try:
                self._nodes = tuple(inventory(self.api, self.config))
            except Exception as exc:
                self._failed(exc)
                raise Unreachable(str(exc)) from exc
        memory = {n.name: n.gpu_memory_bytes for n in self._nodes if n.gpu_memory_bytes}
        self._start_vacating(set(stops), starts, memory)

    def _start_vacating(self, stopped: set[JobKey], starts: list[JobSpec],
                        memory: dict[str, int]) -> None:  # fmt: skip
        """Start `starts` in the pass that carried out the stops `stopped` (issues 39, 40): at
        once those whose devices no pod of `stopped` holds; each of the others as soon as the
        watch shows its holder gone, within `VACATE_WAIT_S`. A victim's pod deleted at once
        frees its device for its claimant in the same pass, without waiting for the others
        (nor for the next cycle); one still terminating at the deadline holds it, so that start
        fails its device check (never two live pods on one device) and is tried again later."""
        deadline, begun = time.monotonic() + VACATE_WAIT_S, []
        while starts:
            seen = self.watcher.changes
            held = adopt.holders(self.watcher.all())
            late = time.monotonic() >= deadline or self._backing_off()
            waits = [not late and _vacating(job, held, stopped) for job in starts]
            ready = [job for job, wait in zip(starts, waits, strict=True) if not wait]
            begun += self._submit(lambda job, held=held: self._start_one(job, memory, held), ready)
            starts = [job for job, wait in zip(starts, waits, strict=True) if wait]
            if starts:
                self.watcher.wait_change(seen, deadline - time.monotonic())
                time.sleep(VACATE_BATCH_S)
        _settle(begun)

    def _each(self, carry: Callable, items: list) -> None:
        """`carry` each item, `config.concurrency` at a time; once the API server cannot be
        reached the items not begun are left owed, and Unreachable (or a BaseException) is
        raised when every item begun is done."""
        if len(items) <= 1:
            for item in items:
                carry(item)
            return
        _settle(self._submit(carry, items))

    def _submit(self, carry: Callable, items: list) -> list[Future]:
        """Begin to `carry` each item on the pool (`_each`); in this thread, one after another,
        when the concurrency is 1."""
        if self.config.concurrency <= 1:
            for item in items:
                carry(item)
            return []

        def one(item) -> None:
            if not self._backing_off():
                carry(item)

        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.config.concurrency, "allot-k8s-carry")
        return [self._pool.submit(one, item) for item in items]

    def _stop_one(self, key: JobKey) -> None:
        with self._lock:
            spec = self._stopping.get(key)
        try:
            if spec is not None and spec.external is not None:
                if adopt.stop(self.api, *key, spec.external.namespace,
                              self.config.grace_period_s):  # fmt: skip
                    self._suspended = True
            else:
                pods.stop_job(self.api, *key, grace_period_s=self.config.grace_period_s, job=spec)
                if spec is None:
                    self._stop_adopted(key)
        except Exception as exc:
            self._stop_failed(key, exc)
            return
        with self._lock:
            self._unstopped.discard(key)
            self._stopping.pop(key, None)
            self._stop_refused.pop(key, None)
            self._retries.clear(key)
            if (spec is None or spec.external is None) and key not in self._specs:
                self._going[key] = self.monotonic()  # its pods terminate: `_reported`

    def _stop_adopted(self, key: JobKey) -> None:
        """Delete the external pods the watch shows labelled with the job, outside the
        project's namespace (a stop whose spec this process does not know)."""
        home = manifests.namespace_for(key[0])
        namespaces = {
            pod["metadata"].get("namespace")
            for pod in self.watcher.snapshot()
            if _job_key(pod) == key and not external.managed(pod)
        } - {home}
        for namespace in sorted(namespaces):
            if adopt.stop(self.api, *key, namespace, self.config.grace_period_s):
                self._suspended = True

    def _stop_failed(self, key: JobKey, exc: Exception) -> None:
        """Back the stop off, or give it up when no retry can help (issue 25 item 1): a moving
        job then fails; a Service or Ingress left behind is the sweep's."""
        kind, message = self._judge(exc, key)
        if kind != "permanent":
            with self._lock:
                wait = self._retries.defer(key, f"stop failed: {message}")
            logger.warning("stopping %s/%s: %s; retrying in %g s", *key, message, wait)
            return
        logger.error("stopping %s/%s: %s; given up (left objects are swept later)", *key, message)
        with self._lock:
            self._unstopped.discard(key)
            self._stopping.pop(key, None)
            self._retries.clear(key)
            self._stop_refused[key] = self.monotonic()
            if self._moving.pop(key, None) is not None:
                self._refused[key] = f"could not be moved: {message}"

    def _start_one(self, job: JobSpec, memory: dict[str, int], held: adopt.Holders) -> None:
        try:
            holder = adopt.holder(job, held)
            if holder:  # issue 40: never two jobs on one device
                raise faults.DeviceHeld(f"not started: {holder}")
            if job.external is not None:
                self._start_external(job)
                with self._lock:
                    if self._unstarted.get(job.key) == job:
                        del self._unstarted[job.key]
                        self._started_at[job.key] = self.monotonic()
                        self._retries.clear(job.key)
                return
            pods.start_job(self.api, job, memory, self.config.image_pull_policy,
                           self.config.session_secret, self._namespaces,
                           self.sessions.claim_for(job))  # fmt: skip
            try:
                pods.expose(self.api, job, self.config.ingress_host, self.config.ingress_class)
            except Exception:
                with contextlib.suppress(Exception):  # else the next attempt finds them (409)
                    pods.stop_job(self.api, job.project, job.name, grace_period_s=0, job=job)
                raise
        except Exception as exc:
            self._start_failed(job, exc)
            return
        with self._lock:
            if self._unstarted.get(job.key) == job:
                del self._unstarted[job.key]
                self._started_at[job.key] = self.monotonic()
                self._retries.clear(job.key)

    def _start_external(self, job: JobSpec) -> None:
        """Bind the external workload's pods to the placement (`adopt.start`)."""
        assert job.external is not None
        uid = job.external.uid
        cached = self.watcher.all()
        if uid not in self._members.values():
            _, self._members = external.workloads(cached, self._owners)
        members = [pod for pod in cached
                   if self._members.get(pod["metadata"].get("uid", "")) == uid]  # fmt: skip
        adopt.start(self.api, job, members)

    def _start_failed(self, job: JobSpec, exc: Exception) -> None:
        """Back the start off, or fail the job with the API's message when no retry can help."""
        kind, message = self._judge(exc, job.key)
        namespace = manifests.namespace_for(job.project)
        with self._lock:
            if self._unstarted.get(job.key) != job:
                return  # stopped or changed meanwhile: this attempt's failure no longer counts
            if kind == "setting-up":
                text = f"waiting for namespace {namespace} to be set up: {message}"
                self._retries.defer(job.key, text, first_s=SETUP_FIRST_WAIT_S)
                return
            if isinstance(exc, faults.DeviceHeld):  # the holder is going: try again soon
                self._retries.clear(job.key)
                wait = self._retries.defer(job.key, f"start failed: {message}",
                                           first_s=HELD_RETRY_S)  # fmt: skip
            elif kind == "transient":
                wait = self._retries.defer(job.key, f"start failed: {message}")
            else:
                del self._unstarted[job.key]
                self._retries.clear(job.key)
                self._refused[job.key] = f"could not be started: {message}"
        if kind == "transient":
            logger.warning("starting %s/%s: %s; retrying in %g s", *job.key, message, wait)
        else:
            logger.warning("starting %s/%s: %s; the job fails", *job.key, message)

    def _judge(self, exc: Exception, key: JobKey) -> tuple[faults.Kind, str]:
        """(kind, message) of one job's failure; raise Unreachable when it is the whole
        cluster's. A namespace set up for longer than `namespace_setup_s` is not setting up."""
        kind = faults.kind(exc)
        if kind == "unreachable":
            self._failed(exc)
            raise Unreachable(str(exc)) from exc
        if kind == "setting-up" and self._retries.failing_for(key) >= self.config.namespace_setup_s:
            kind = "transient" if getattr(exc, "status", 0) >= 500 else "permanent"
        if kind == "permanent" and not isinstance(exc, ApiException):
            logger.exception("job %s/%s", *key, exc_info=exc)
        return kind, faults.describe(exc)

    def _quietly(self, what: str, call: Callable, *args) -> bool:
        """Call `call`; log a failure that is not the whole cluster's. True when it worked."""
        try:
            call(*args)
        except Exception as exc:
            self._tolerate(what, exc)
            return False
        return True

    def _tolerate(self, what: str, exc: Exception) -> None:
        """Log the failure of a side task (no job waits on it); raise Unreachable when the
        API server cannot be reached at all."""
        if faults.kind(exc) == "unreachable":
            self._failed(exc)
            raise Unreachable(str(exc)) from exc
        logger.warning("%s: %s", what, faults.describe(exc))

    def _listing(self) -> sweep.Listing | None:
        """Allot's Services and Ingresses; None when the API will not list them (logged)."""
        try:
            return sweep.listing(self.api)
        except Exception as exc:
            self._tolerate("listing Allot's Services and Ingresses", exc)
            return None

    def _resume(self) -> None:
        """Resume the Jobs suspended to evict their pods once those are gone (`adopt.resume`):
        their Job controller recreates the pods, which wait for Allot again. Listed only while
        one may wait, and every `sweep_interval_s`."""
        if not self._suspended and self.monotonic() - self._swept_at < self.config.sweep_interval_s:
            return
        try:
            self._suspended = adopt.resume(self.api) > 0
        except Exception as exc:
            self._tolerate("resuming the Jobs suspended to evict their pods", exc)

    def _free_reservations(self) -> None:
        """Delete reservation pods whose shared device no fractional pod has used for a while."""
        cached = self.watcher.snapshot()
        used = set()
        for pod in cached:
            notes = pod["metadata"].get("annotations") or {}
            if float(notes.get("allot.io/share", "1") or 1) < 1:
                for device in filter(None, notes.get("allot.io/devices", "").split(",")):
                    used.add((notes.get("allot.io/node", ""), device))
        with self._lock:
            owed = list(self._unstarted.values()) + list(self._moving.values())
        used |= {(node, str(device)) for job in owed
                 for node, device in manifests.shared_devices(job)}  # fmt: skip
        now = self.monotonic()
        core = client.CoreV1Api(self.api)
        for pod in cached:
            labels = pod["metadata"].get("labels") or {}
            if labels.get("allot.io/reservation") != "true":
                continue
            where = ((pod.get("spec") or {}).get("nodeName") or "", labels.get("allot.io/device"))
            name = pod["metadata"]["name"]
            if where in used:
                self._unused_since.pop(name, None)
            elif now - self._unused_since.setdefault(name, now) >= RESERVATION_GRACE_S:
                self._quietly(f"freeing reservation {name}", pods.delete_pod, core,
                              manifests.RESERVATION_NAMESPACE, name, 0)  # fmt: skip
                self._unused_since.pop(name, None)

    def _sweep(self) -> None:
        """Every `sweep_interval_s`: delete the Services, Ingresses and pods no job has claimed
        for `orphan_grace_s`, recreate the Services and Ingresses of started jobs that vanished
        (`sweep`)."""
        now = self.monotonic()
        if now - self._swept_at < self.config.sweep_interval_s:
            return
        if not self.watcher.synced.is_set() or self.watcher.error:
            return  # without the pods, every job of another process would look unclaimed
        with self._lock:
            started = [self._specs[key] for key in self._started_at
                       if key in self._specs and key not in self._unstarted
                       and key not in self._moving and key not in self._unstopped]  # fmt: skip
        self._swept_at = now
        seen = self._listing()
        if seen is not None:
            self._delete_orphans(seen)
            self._recreate(sweep.missing(seen, started, self.config.ingress_host))

    def _delete_orphans(self, seen: sweep.Listing) -> None:
        cached = self.watcher.snapshot()
        seen = replace(seen, objects=seen.objects + tuple(sweep.job_pods(cached)))
        whole = {key for key, found in _grouped(cached).items() if complete(found)}
        with self._lock:
            claimed = self._specs.keys() | self._unstopped | whole
        for found in self._orphans.due(seen, claimed):
            what = f"deleting {found.kind} {found.namespace}/{found.name}, which no job claims"
            logger.info("%s", what)
            grace = self.config.grace_period_s
            if not self._quietly(what, sweep.delete, self.api, found, grace):
                self._orphans.later(found)

    def _recreate(self, jobs: list[JobSpec]) -> None:
        for job in jobs:
            what = f"recreating the Service of {job.project}/{job.name}, deleted outside Allot"
            logger.warning("%s", what)
            self._quietly(what, pods.expose, self.api, job, self.config.ingress_host,
                          self.config.ingress_class)  # fmt: skip

    # ------------------------------------------------------------------ reading
    def _observation(self, now: datetime, nodes: tuple[NodeStatus, ...],
                     usage: dcgm.GpuUtilization | None = None) -> Observation:  # fmt: skip
        jobs = self._job_statuses(usage) if not self.problem else self._as_last_seen()
        synced = not self.problem and self.watcher.synced.is_set() and not self.watcher.error
        found: tuple = ()
        if nodes and not self.problem:
            cached = self.watcher.all()
            with self._lock:
                ours = {(_namespace(spec), *key) for key, spec in self._specs.items()}
            held = external.outside(cached, ours)
            nodes = tuple(replace(node, outside_gpus=held[node.name][0],
                                  outside_cpu_millis=held[node.name][1],
                                  outside_memory_bytes=held[node.name][2])
                          if node.name in held else node for node in nodes)  # fmt: skip
            try:
                workloads, self._members = external.workloads(cached, self._owners)
                found = tuple(workloads)
            except Exception as exc:  # an owner unreadable: the view is partial this cycle
                synced = False
                with contextlib.suppress(Unreachable):  # the next observe reports the outage
                    self._tolerate("reading the owners of external pods", exc)
        return Observation(at=now, jobs=jobs, nodes=nodes, simulated=False, problem=self.problem,
                           synced=synced, workloads=found)  # fmt: skip

    def _nodes_offline(self) -> tuple[NodeStatus, ...]:
        return ()  # nothing is known: the portal keeps the nodes as they were

    def _as_last_seen(self) -> dict[JobKey, JobStatus]:
        with self._lock:
            return {key: self._last.get(key) or JobStatus(*key, "ContainerCreating")
                    for key in self._specs}  # fmt: skip

    def _job_statuses(self, usage: dcgm.GpuUtilization | None) -> dict[JobKey, JobStatus]:
        statuses: dict[JobKey, JobStatus] = {}
        with self._lock:
            grouped = _grouped(self.watcher.snapshot(), self._specs)
            self._forget_gone(grouped)
            for key, found in grouped.items():
                if self._reported(key, found):
                    statuses[key] = self._seen(key, found, usage)
            for key in self._specs.keys() - statuses.keys():
                statuses[key] = self._unseen(key)
            statuses = {key: self._of_run(status) for key, status in statuses.items()}
            self._last = dict(statuses)
        return statuses

    def _reported(self, key: JobKey, found: list[dict]) -> bool:
        """Whether a job whose pods the watch sees is reported: not while its stop or move is
        owed; one this agent does not run only when all its pods were created and bound. A
        process that died in the middle of a start leaves one that is not: unreported, it is
        started again by the portal's reconciliation (completing it) if the database holds
        it, and its pods are swept if not."""
        if key in self._moving or key in self._unstopped or key in self._going:
            return False
        return key in self._specs or complete(found)

    def _forget_gone(self, grouped: Mapping[JobKey, list[dict]]) -> None:
        """Issue 39: a job this agent stopped is not reported while its pods terminate (the
        grace period, a loaded kubelet's delay), which the portal, no longer holding it, took
        for a job to stop again: by its labels, three delete-collections each cycle, the most
        of a reclaim's requests. Reported again once its pods are gone, or when they outlast
        their grace period by `GOING_SLACK_S` (the portal then stops it again)."""
        late = self.monotonic() - self.config.grace_period_s - GOING_SLACK_S
        for key in [key for key, at in self._going.items() if key not in grouped or at < late]:
            del self._going[key]

    def _seen(self, key: JobKey, found: list[dict],
              usage: dcgm.GpuUtilization | None) -> JobStatus:  # fmt: skip
        """A job whose pods the watch sees: their phase, unless it was refused or some of
        its pods vanished (a gang runs all or nothing, R6.1)."""
        if key in self._refused:
            return JobStatus(*key, "Failed", message=self._refused[key])
        status = job_status(*key, found)
        gone = self._vanished_pods(key, found)
        if gone:
            message = f"pod {', '.join(gone)} was deleted outside Allot"
            status = replace(status, phase="Failed", message=message)
        if usage is not None:
            names = [pod["metadata"]["name"] for pod in found]
            namespace = manifests.namespace_for(key[0])
            status = replace(
                status,
                utilization=usage.job(namespace, names),
                gpu_memory_used_bytes=usage.job_memory(namespace, names),
            )
        return status

    def _unseen(self, key: JobKey) -> JobStatus:
        """A job this agent runs of which the watch sees no pod."""
        if key in self._refused:
            return JobStatus(*key, "Failed", message=self._refused[key])
        if self._settled(key):
            return JobStatus(*key, "Failed", message="its pods were deleted outside Allot")
        return JobStatus(*key, "ContainerCreating", message=self._retries.message(key))

    def _settled(self, key: JobKey) -> bool:
        """True when the job was started long enough ago that its pods must be in the cache."""
        started = self._started_at.get(key)
        return (started is not None and self.watcher.synced.is_set()
                and key not in self._unstarted and key not in self._moving
                and self.monotonic() - started >= self.config.vanished_after_s)  # fmt: skip

    def _vanished_pods(self, key: JobKey, found: list[dict]) -> list[str]:
        """The names of the started job's pods that the watch no longer sees."""
        spec = self._specs.get(key)
        if spec is None or spec.external is not None or not self._settled(key):
            return []  # an external job's pods are named by their owner
        names = {pod["metadata"]["name"] for pod in found}
        expected = [manifests.pod_name(spec, index) for index in range(len(spec.placement))]
        return [name for name in expected if name not in names]

    def _of_run(self, status: JobStatus) -> JobStatus:
        """`status` naming the run it describes: the started_at of the spec this agent runs."""
        spec = self._specs.get(status.key)
        return status if spec is None else replace(status, started_at=spec.started_at)

    def _utilization(self) -> dcgm.GpuUtilization | None:
        if not self.config.dcgm_url:
            return None
        try:
            usage = dcgm.scrape(self.config.dcgm_url)
        except (OSError, ValueError) as exc:
            logger.warning("DCGM exporter at %s: %s", self.config.dcgm_url, exc)
            return None
        self._nodes = tuple(replace(node, device_utilization=usage.devices.get(node.name, {}),
                                    device_memory_used_bytes=usage.device_memory.get(node.name, {}))
                            for node in self._nodes)  # fmt: skip
        return usage


def _namespace(job: JobSpec) -> str:
    """Where the job's pods are: the project's namespace, or the external workload's."""
    return (
        job.external.namespace if job.external is not None else manifests.namespace_for(job.project)
    )


def _grouped(
    cached: list[dict], specs: Mapping[JobKey, JobSpec] | None = None
) -> dict[JobKey, list[dict]]:
    """The cached job pods by job. With `specs`, only the pods in the namespace a job's pods
    are in count (the project's; an external job's workload's, else none outside the
    project's): anyone who may make pods somewhere could label one with another project's job
    and fail or finish it."""
    grouped: dict[JobKey, list[dict]] = {}
    for pod in cached:
        key = _job_key(pod)
        if key is None:
            continue
        if specs is not None:
            spec = specs.get(key)
            home = _namespace(spec) if spec is not None else manifests.namespace_for(key[0])
            if pod["metadata"].get("namespace") != home:
                continue
        grouped.setdefault(key, []).append(pod)
    return grouped


def _settle(futures: list[Future]) -> None:
    """Wait for every future; then raise the first failure (Unreachable, a BaseException)."""
    raised = [exc for exc in (future.exception() for future in futures) if exc is not None]
    if raised:
        raise raised[0]


def _vacating(job: JobSpec, held: adopt.Holders, stopped: set[JobKey]) -> bool:
    """Whether a pod of one of the jobs just stopped holds a device of `job`'s placement."""
    found = adopt.holding(job, held)
    return found is not None and _job_key(found[2]) in stopped


def _job_key(pod: dict) -> JobKey | None:
    """(project, job) of one of Allot's job pods; None for reservation pods."""
    labels = pod["metadata"].get("labels") or {}
    if "allot.io/project" in labels and "allot.io/job" in labels:
        return (labels["allot.io/project"], labels["allot.io/job"])
    return None
