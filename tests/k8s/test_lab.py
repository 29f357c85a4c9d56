"""Smoke tests of the Kubernetes lab: what the agent's integration tests will rely on."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.k8s.lab import KEEP_RUNNING_LABEL, Lab, eventually, start_lab, stop_lab

pytestmark = pytest.mark.k8s

GFD_LABELS = ("nvidia.com/gpu.product", "nvidia.com/gpu.count", "nvidia.com/gpu.memory")


@pytest.fixture
def namespace(k8s_lab: Lab) -> Iterator[str]:
    name = f"lab-{uuid.uuid4().hex[:8]}"
    k8s_lab.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    try:
        k8s_lab.core.delete_namespace(name)
    except ApiException as error:
        if error.status != 404:
            raise


def pod(name: str, *, node: str | None = None, scheduler: str | None = None) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(
            node_name=node,
            scheduler_name=scheduler,
            automount_service_account_token=False,
            containers=[
                client.V1Container(
                    name="main",
                    image="registry.example/allot/never-pulled:1",  # KWOK pulls nothing
                    resources=client.V1ResourceRequirements(
                        requests={"nvidia.com/gpu": "2"}, limits={"nvidia.com/gpu": "2"}
                    ),
                )
            ],
        ),
    )


def running_on(core: client.CoreV1Api, namespace: str, name: str) -> str | None:
    """The pod's node once it is Running with every container ready."""
    status = core.read_namespaced_pod(name, namespace)
    ready = all(c.ready for c in status.status.container_statuses or [])
    if status.status.phase == "Running" and ready and status.status.container_statuses:
        return status.spec.node_name
    return None


def test_nodes_are_ready_with_gpus_and_feature_discovery_labels(k8s_lab: Lab) -> None:
    nodes = {n.metadata.name: n for n in k8s_lab.core.list_node().items}
    assert sorted(nodes) == sorted(k8s_lab.nodes)
    assert len(nodes) == 2
    for node in nodes.values():
        ready = [c for c in node.status.conditions if c.type == "Ready"]
        assert [c.status for c in ready] == ["True"], node.metadata.name
        assert node.status.allocatable["nvidia.com/gpu"] == "8"
        assert node.status.capacity["nvidia.com/gpu"] == "8"
        for label in GFD_LABELS:
            assert node.metadata.labels.get(label), (node.metadata.name, label)
        assert node.metadata.labels["nvidia.com/gpu.count"] == "8"
        assert not node.spec.unschedulable
        assert not [t for t in node.spec.taints or [] if t.key.startswith("node.kubernetes.io/")]


def test_a_pod_with_node_name_becomes_running_under_kwok(k8s_lab: Lab, namespace: str) -> None:
    node = k8s_lab.nodes[0]
    k8s_lab.core.create_namespaced_pod(namespace, pod("direct", node=node))
    assert eventually(lambda: running_on(k8s_lab.core, namespace, "direct"), "Running") == node


def test_a_pod_bound_through_the_binding_subresource_becomes_running(
    k8s_lab: Lab, namespace: str
) -> None:
    """What Allot does as the scheduler: schedulerName `allot`, then pods/binding."""
    node = k8s_lab.nodes[1]
    k8s_lab.core.create_namespaced_pod(namespace, pod("bound", scheduler="allot"))
    time.sleep(1)
    assert k8s_lab.core.read_namespaced_pod("bound", namespace).status.phase == "Pending"
    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(name="bound"),
        target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
    )
    # The API answers a Status, which the client cannot read as a V1Binding: read nothing.
    k8s_lab.core.create_namespaced_pod_binding("bound", namespace, binding, _preload_content=False)
    assert eventually(lambda: running_on(k8s_lab.core, namespace, "bound"), "Running") == node


def test_a_namespace_gets_its_default_service_account_and_root_ca(
    k8s_lab: Lab, namespace: str
) -> None:
    def default_account() -> bool:
        try:
            k8s_lab.core.read_namespaced_service_account("default", namespace)
            k8s_lab.core.read_namespaced_config_map("kube-root-ca.crt", namespace)
        except ApiException as error:
            if error.status == 404:
                return False
            raise
        return True

    eventually(default_account, "the default service account and kube-root-ca.crt")


def test_the_garbage_collector_deletes_dependents(k8s_lab: Lab, namespace: str) -> None:
    core = k8s_lab.core
    owner = core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owner"))
    )
    reference = client.V1OwnerReference(
        api_version="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid
    )
    dependent = client.V1ObjectMeta(name="dependent", owner_references=[reference])
    core.create_namespaced_config_map(namespace, client.V1ConfigMap(metadata=dependent))
    core.delete_namespaced_config_map("owner", namespace)

    def gone() -> bool:
        names = {c.metadata.name for c in core.list_namespaced_config_map(namespace).items}
        return "dependent" not in names

    eventually(gone, "the dependent ConfigMap to be collected")


def test_deleting_a_namespace_with_a_running_pod_completes(k8s_lab: Lab) -> None:
    core = k8s_lab.core
    name = f"lab-{uuid.uuid4().hex[:8]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    core.create_namespaced_pod(name, pod("doomed", node=k8s_lab.nodes[0]))
    eventually(lambda: running_on(core, name, "doomed"), "Running")
    core.delete_namespace(name)

    def gone() -> bool:
        return name not in {n.metadata.name for n in core.list_namespace().items}

    eventually(gone, f"namespace {name} to be deleted", timeout=120)


def job_pod_template(
    labels: dict[str, str] | None = None, *, node: str | None = None
) -> client.V1PodTemplateSpec:
    """A one-container pod template of one GPU, without a restart policy (JobSet's webhook
    gives one; a Job is refused without one)."""
    return client.V1PodTemplateSpec(
        metadata=client.V1ObjectMeta(labels=labels),
        spec=client.V1PodSpec(
            node_name=node,
            automount_service_account_token=False,
            containers=[
                client.V1Container(
                    name="main",
                    image="registry.example/allot/never-pulled:1",
                    resources=client.V1ResourceRequirements(
                        requests={"nvidia.com/gpu": "1"}, limits={"nvidia.com/gpu": "1"}
                    ),
                )
            ],
        ),
    )


def jobset(name: str, **spec: object) -> dict:
    """A JobSet of 2 replicated Jobs (workers, launchers) of 2 pods each, as a user writes it:
    no restart policy, no success policy, no network settings (JobSet's webhook defaults them)."""
    template = client.ApiClient().sanitize_for_serialization(job_pod_template())
    replicated = [
        {
            "name": role,
            "replicas": 1,
            "template": {"spec": {"parallelism": 2, "completions": 2, "template": template}},
        }
        for role in ("workers", "launchers")
    ]
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name},
        "spec": {"replicatedJobs": replicated, **spec},
    }


def test_a_jobset_gets_its_jobs_and_pods_from_the_jobset_controller(
    k8s_lab: Lab, namespace: str
) -> None:
    """The lab runs JobSet's controller and webhooks (`start --jobset`): the JobSet is defaulted
    by the mutating webhook (its pods get restartPolicy OnFailure, which a Job needs), and the
    controller makes one Job per replicated Job, 2 pods each, and the headless Service."""
    objects = client.CustomObjectsApi(k8s_lab.api_client)
    objects.create_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", namespace, "jobsets", jobset("train")
    )
    created = objects.get_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", namespace, "jobsets", "train"
    )
    assert created["spec"]["successPolicy"]["operator"] == "All"
    assert created["spec"]["network"]["enableDNSHostnames"] is True
    batch = client.BatchV1Api(k8s_lab.api_client)

    def jobs() -> list[client.V1Job]:
        found = batch.list_namespaced_job(
            namespace, label_selector="jobset.sigs.k8s.io/jobset-name=train"
        ).items
        return found if len(found) == 2 else []

    made = eventually(jobs, "the JobSet's 2 Jobs")
    assert sorted(j.metadata.name for j in made) == ["train-launchers-0", "train-workers-0"]
    for job in made:
        assert [o.kind for o in job.metadata.owner_references] == ["JobSet"]
        assert job.spec.parallelism == 2

    def pods() -> list[client.V1Pod]:
        found = k8s_lab.core.list_namespaced_pod(
            namespace, label_selector="jobset.sigs.k8s.io/jobset-name=train"
        ).items
        return found if len(found) == 4 else []

    made_pods = eventually(pods, "the JobSet's 4 pods")
    assert {p.spec.restart_policy for p in made_pods} == {"OnFailure"}
    assert {p.spec.subdomain for p in made_pods} == {"train"}  # the JobSet's headless Service
    # No scheduler runs in the lab: the pods wait for whichever scheduler they name.
    assert {p.spec.node_name for p in made_pods} == {None}
    assert k8s_lab.core.read_namespaced_service("train", namespace).spec.cluster_ip == "None"


def test_the_jobset_webhook_refuses_an_invalid_jobset(k8s_lab: Lab, namespace: str) -> None:
    """The validating webhook answers: a failure policy naming a replicated Job the JobSet does
    not have passes the CRD's schema and is refused only by JobSet's own validation."""
    objects = client.CustomObjectsApi(k8s_lab.api_client)
    invalid = jobset(
        "broken",
        failurePolicy={"rules": [{"action": "FailJobSet", "targetReplicatedJobs": ["nowhere"]}]},
    )
    with pytest.raises(ApiException) as refused:
        objects.create_namespaced_custom_object(
            "jobset.x-k8s.io", "v1alpha2", namespace, "jobsets", invalid
        )
    assert refused.value.status in (400, 403, 422)
    assert "vjobset.kb.io" in refused.value.body
    assert "'nowhere'" in refused.value.body


def job(name: str, labels: dict[str, str] | None, node: str) -> client.V1Job:
    template = job_pod_template(labels, node=node)
    template.spec.restart_policy = "Never"
    return client.V1Job(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1JobSpec(parallelism=1, completions=1, template=template),
    )


def phases(core: client.CoreV1Api, namespace: str, job_name: str) -> list[str]:
    pods = core.list_namespaced_pod(namespace, label_selector=f"job-name={job_name}").items
    return [p.status.phase for p in pods]


def test_a_job_pod_labelled_keep_running_stays_running(k8s_lab: Lab, namespace: str) -> None:
    """KWOK finishes a Job's pods as soon as they run; one labelled KEEP_RUNNING_LABEL stays
    Running until it is deleted (what a test of an external Job's GPUs needs)."""
    batch = client.BatchV1Api(k8s_lab.api_client)
    node = k8s_lab.nodes[0]
    batch.create_namespaced_job(namespace, job("held", {KEEP_RUNNING_LABEL: "true"}, node))
    batch.create_namespaced_job(namespace, job("finished", None, node))
    eventually(lambda: phases(k8s_lab.core, namespace, "finished") == ["Succeeded"], "Succeeded")
    eventually(lambda: phases(k8s_lab.core, namespace, "held") == ["Running"], "Running")
    for _ in range(10):
        time.sleep(1)
        assert phases(k8s_lab.core, namespace, "held") == ["Running"]
    assert not batch.read_namespaced_job_status("held", namespace).status.succeeded


def test_with_job_pods_run_every_job_pod_stays_running() -> None:
    """`start --job-pods-run`: KWOK runs no pod-complete stage, so an unlabelled Job's pod stays
    Running too (a lab of its own, one node)."""
    workdir, state = start_lab("allot-k8s-lab-jobs-run-", "--nodes", "1", "--job-pods-run")
    lab = Lab(
        dir=workdir,
        kubeconfig=Path(state["kubeconfig"]),
        server=state["server"],
        nodes=state["nodes"],
        gpus_per_node=state["gpus_per_node"],
        api_client=config.new_client_from_config(config_file=state["kubeconfig"]),
    )
    try:
        client.BatchV1Api(lab.api_client).create_namespaced_job(
            "default", job("plain", None, lab.nodes[0])
        )
        eventually(lambda: phases(lab.core, "default", "plain") == ["Running"], "Running")
        for _ in range(5):
            time.sleep(1)
            assert phases(lab.core, "default", "plain") == ["Running"]
    finally:
        stop_lab(lab)
