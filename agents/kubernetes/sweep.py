"""Reconciling a job's objects both ways (issue 25 item 2).

Allot's pods, Services and Ingresses carry its labels (`app.kubernetes.io/managed-by=allot`,
project, job). Every `sweep_interval_s` the agent lists the Services and Ingresses in all
namespaces, takes the pods from its watch, and:

- deletes those no job claims for `orphan_grace_s` in a row. A job claims its objects while
  this agent has its spec, owes its stop, or sees all its pods created and bound: the agent
  reports such a job, and the portal's reconciliation stops it if the database does not hold
  it, so there the database decides. What is left: a Service that outlived its pods (a stop
  lost in a restart, or refused), and the pods of a start its process died in the middle of
  (a gang in part, a pod never bound), which the agent does not report so that the portal's
  reconciliation starts the job again, completing it, if the database holds it. The grace
  period covers a restart, after which the agent knows no spec until that reconciliation has
  started the jobs the database holds (every cycle, well within the grace), and other
  processes' jobs, whose pods this one's watch sees;
- recreates the Service (and Ingress) of a job this agent started whose object is gone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from agents.base import JobKey, JobSpec
from agents.kubernetes import manifests, pods

SELECTOR = ",".join(f"{key}={value}" for key, value in manifests.MANAGED_BY.items())


@dataclass(frozen=True)
class Labelled:
    """One of Allot's Services or Ingresses as listed."""

    kind: str  # "Service", "Ingress" or "Pod"
    namespace: str
    name: str
    job: JobKey


@dataclass(frozen=True)
class Listing:
    """Allot's Services and Ingresses in every namespace; `ingresses` is False when the cluster
    serves no `networking.k8s.io/v1` Ingresses (nothing to list, nothing to recreate)."""

    objects: tuple[Labelled, ...]
    ingresses: bool = True


def listing(api: client.ApiClient) -> Listing:
    """List Allot's Services and Ingresses (two requests, by label, in all namespaces)."""
    core, networking = client.CoreV1Api(api), client.NetworkingV1Api(api)
    found = _items("Service", core.list_service_for_all_namespaces)
    try:
        found += _items("Ingress", networking.list_ingress_for_all_namespaces)
    except ApiException as exc:
        if exc.status != 404:
            raise
        return Listing(tuple(found), ingresses=False)
    return Listing(tuple(found))


def _items(kind: str, call) -> list[Labelled]:
    answer = call(label_selector=SELECTOR, _preload_content=False, _request_timeout=10)
    found = []
    for item in json.loads(answer.data).get("items") or ():
        metadata = item.get("metadata") or {}
        labels = metadata.get("labels") or {}
        if "allot.io/project" in labels and "allot.io/job" in labels:
            job = (labels["allot.io/project"], labels["allot.io/job"])
            found.append(Labelled(kind, metadata.get("namespace", ""), metadata["name"], job))
    return found


def job_pods(cached: Iterable[dict]) -> list[Labelled]:
    """The job pods among the watch's (reservation pods belong to no job)."""
    found = []
    for pod in cached:
        metadata = pod["metadata"]
        labels = metadata.get("labels") or {}
        if "allot.io/project" in labels and "allot.io/job" in labels:
            job = (labels["allot.io/project"], labels["allot.io/job"])
            found.append(Labelled("Pod", metadata.get("namespace", ""), metadata["name"], job))
    return found


def delete(api: client.ApiClient, found: Labelled, grace_period_s: int = 30) -> None:
    """Delete one listed object; one already gone is fine."""
    if found.kind == "Pod":
        pods.delete_pod(client.CoreV1Api(api), found.namespace, found.name, grace_period_s)
        return
    if found.kind == "Service":
        call = client.CoreV1Api(api).delete_namespaced_service
    else:
        call = client.NetworkingV1Api(api).delete_namespaced_ingress
    pods.delete_one(call, found.namespace, found.name)


def missing(seen: Listing, started: Iterable[JobSpec], ingress_host: str) -> list[JobSpec]:
    """The started jobs whose Service, or Ingress, is not in `seen` (deleted outside Allot)."""
    present = {(found.kind, found.namespace, found.name) for found in seen.objects}
    gone = []
    for job in started:
        namespace = manifests.namespace_for(job.project)
        wants = [("Service", manifests.service(job)),
                 ("Service", manifests.rendezvous_service(job))]  # fmt: skip
        if seen.ingresses and ingress_host:
            wants.append(("Ingress", manifests.ingress(job, ingress_host)))
        if any(body is not None and (kind, namespace, body["metadata"]["name"]) not in present
               for kind, body in wants):  # fmt: skip
            gone.append(job)
    return gone


class Orphans:
    """Which listed objects no job has claimed for `grace_s` in a row (by `monotonic`)."""

    def __init__(self, grace_s: float, monotonic: Callable[[], float]):
        self.grace_s = grace_s
        self.monotonic = monotonic
        self._since: dict[Labelled, float] = {}

    def due(self, seen: Listing, claimed: set[JobKey]) -> list[Labelled]:
        """The unclaimed objects of `seen` whose grace is over; forgets the rest."""
        now = self.monotonic()
        unclaimed = [found for found in seen.objects if found.job not in claimed]
        self._since = {found: self._since.get(found, now) for found in unclaimed}
        return [found for found, since in self._since.items() if now - since >= self.grace_s]

    def later(self, found: Labelled) -> None:
        """Deleting `found` failed: try again after another grace period, not at every sweep."""
        self._since[found] = self.monotonic()
