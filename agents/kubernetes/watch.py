"""Allot's pods as the API server last told us: one list, then a watch that resumes where it left.

`PodWatcher` keeps a cache, in a daemon thread, of the pods Allot must see in all namespaces
(issue 33): its own (labelled `app.kubernetes.io/managed-by=allot`), those of other tools that
ask for it (`spec.schedulerName: allot`), and every other live pod bound to a node, whose
requests hold part of it. Ended pods of other schedulers are not kept. `snapshot()` gives the
pods of Allot's jobs (its own, and external pods it bound and labelled with a job), `all()`
every pod kept:

1. list (the cache is replaced; the list's resourceVersion is where the watch starts);
2. watch from that resourceVersion, applying ADDED / MODIFIED / DELETED; when the server ends the
   stream (its timeout), watch again from the last resourceVersion seen;
3. 410 Gone (the server compacted the history we would resume from): back to 1. The relist
   replaces the cache with the pods as they are now, so a transition that happened while no
   watch was open is not lost: the pod shows its latest phase (and a deleted pod is gone).
4. Any other failure (connection refused, a 5xx): `error` says so, and the thread retries with
   exponential back-off (1 s doubling to `max_backoff_s`), starting again from 1.

Pods are kept as the raw dicts the API sent (no model objects: cheaper and what `status` reads).
The client's watch would build a V1Pod of every event (its timestamps parsed by dateutil) when
the listing function documents its return type: profiled during `make bench-k8s`, that was a
quarter of the worker's CPU. The watch is given an undocumented wrapper, so it only decodes JSON.
"""

from __future__ import annotations

import json
import logging
import threading
import time

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from agents.kubernetes import manifests
from agents.kubernetes.telemetry import Tally

logger = logging.getLogger(__name__)

((MANAGED_KEY, MANAGED_VALUE),) = manifests.MANAGED_BY.items()
GONE = 410


class PodWatcher:
    """A thread-fed cache of Allot's pods; `snapshot()` reads it."""

    def __init__(self, api: client.ApiClient, timeout_s: int = 30, max_backoff_s: float = 30.0,
                 tally: Tally | None = None):  # fmt: skip
        self.core = client.CoreV1Api(api)
        self.tally = tally or Tally()  # the back-offs, for the portal's metrics
        self.timeout_s = timeout_s
        self.max_backoff_s = max_backoff_s
        self.pods: dict[tuple[str, str], dict] = {}
        self.resource_version = ""
        self.relists = 0  # how many times the cache was rebuilt from a list
        self.error = ""  # why the last attempt failed ("" while watching)
        self.synced = threading.Event()  # set after the first successful list
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # notified at each change of the cache
        self.changes = 0  # how many times the cache changed: `wait_change` waits for the next
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._watch: watch.Watch | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread (once)."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="allot-pod-watch",
                                                daemon=True)  # fmt: skip
                self._thread.start()

    def wake(self) -> None:
        """Cut the current back-off short (the API server answers again)."""
        self._wake.set()

    def stop(self) -> None:
        """End the thread at its next step."""
        self._stop.set()
        self._wake.set()
        if self._watch is not None:
            self._watch.stop()

    def snapshot(self) -> list[dict]:
        """The cached pods of Allot's jobs: its own, and external pods it labelled with a job."""
        with self._lock:
            return [pod for pod in self.pods.values() if _allots(pod)]

    def all(self) -> list[dict]:
        """Every cached pod: Allot's, external ones asking for it, and others bound to nodes."""
        with self._lock:
            return list(self.pods.values())

    # ------------------------------------------------------------------ the thread
    def _run(self) -> None:
        backoff = 1.0
        while not self._stop.is_set():
            try:
                self._list()
                backoff = 1.0
                while not self._stop.is_set():
                    self._watch_once()
            except ApiException as exc:
                if exc.status == GONE:
                    logger.info("pod watch expired (410 Gone): relisting")
                    continue
                self._failed(f"the API server answered {exc.status} {exc.reason}".strip())
                self.tally.backed_off("watch", backoff)
            except Exception as exc:
                self._failed(f"cannot reach the API server: {type(exc).__name__}")
                self.tally.backed_off("watch", backoff)
            self._wake.wait(backoff)
            self._wake.clear()
            backoff = min(backoff * 2, self.max_backoff_s)

    def _failed(self, message: str) -> None:
        self.error = message
        logger.warning("pod watch: %s", message)

    def _list(self) -> None:
        answer = self.core.list_pod_for_all_namespaces(_preload_content=False, _request_timeout=30)
        body = json.loads(answer.data)
        with self._lock:
            self.pods = {_key(pod): pod for pod in body.get("items") or () if kept(pod)}
            self.resource_version = body["metadata"].get("resourceVersion", "")
            self.relists += 1
            self._changed_now()
        self.error = ""
        self.synced.set()

    def _watch_once(self) -> None:
        """One watch request from the last resourceVersion until the server ends it."""
        self._watch = watch.Watch()
        stream = self._watch.stream(
            self._pods,
            resource_version=self.resource_version,
            timeout_seconds=self.timeout_s,
            _request_timeout=self.timeout_s + 10,
        )
        for event in stream:
            pod = event["raw_object"]
            with self._lock:
                if event["type"] == "DELETED":
                    self.pods.pop(_key(pod), None)
                elif event["type"] in ("ADDED", "MODIFIED"):
                    if kept(pod):
                        self.pods[_key(pod)] = pod
                    else:
                        self.pods.pop(_key(pod), None)
                version = pod.get("metadata", {}).get("resourceVersion")
                if version:
                    self.resource_version = version
                self._changed_now()
            if self._stop.is_set():
                break

    def _changed_now(self) -> None:  # with the lock held
        self.changes += 1
        self._changed.notify_all()

    def wait_change(self, seen: int, timeout_s: float) -> int:
        """Wait until the cache changed since it counted `seen` changes, at most `timeout_s`;
        the count now. A carry-out waiting for a deleted pod to go wakes at the event that
        shows it, instead of polling the cache (which a busy watch keeps long to copy)."""
        with self._changed:
            self._changed.wait_for(lambda: self.changes != seen, max(timeout_s, 0.0))
            return self.changes

    def _pods(self, **kwargs):  # no docstring, so no return type: events stay JSON
        return self.core.list_pod_for_all_namespaces(**kwargs)

    def wait_for(self, resource_version: int, timeout_s: float = 5.0) -> bool:
        """Wait until the cache has seen `resource_version` (tests and `allot` tools)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.resource_version and int(self.resource_version) >= resource_version:
                return True
            time.sleep(0.01)
        return False


def _allots(pod: dict) -> bool:
    labels = pod["metadata"].get("labels") or {}
    return labels.get(MANAGED_KEY) == MANAGED_VALUE or "allot.io/job" in labels


def kept(pod: dict) -> bool:
    """Whether the cache keeps `pod`: Allot's, asking for Allot, or live and bound to a node."""
    if _allots(pod):
        return True
    spec = pod.get("spec") or {}
    if spec.get("schedulerName") == manifests.SCHEDULER_NAME:
        return True
    phase = (pod.get("status") or {}).get("phase")
    return bool(spec.get("nodeName")) and phase not in ("Succeeded", "Failed")


def _key(pod: dict) -> tuple[str, str]:
    return (pod["metadata"].get("namespace", ""), pod["metadata"]["name"])
