"""The portal's cycle with ALLOT_AGENT=kubernetes against the fake API server (Step 6).

TR-4858's sequence replayed through the database: the nodes come from the cluster's inventory,
the right pods are created and bound to the planned nodes, deleted on reclaim (R9), and job
states follow the pod phases the server reports; the Jupyter job gets a Service, an Ingress and
its URL. Faults: an unreachable API server leaves submissions accepted and the cycle planning,
and the overview says so; a 500 in the middle of a gang leaves no pod of it.
"""

from __future__ import annotations

import time

import pytest
from django.test import override_settings

from agents.kubernetes.agent import KubernetesAgent
from agents.kubernetes.inventory import KubernetesConfig
from agents.kubernetes.sessions import session_token
from portal.cluster.models import Node
from portal.dashboards.overview import build_full_overview
from portal.jobs.models import HOLDING, Job, Status
from portal.scheduling.agent import _build_agent, job_urls, session_secret
from tests.agents.kubernetes.fake_api import FakeKubernetes, Monotonic, node
from tests.portal.scheduling.conftest import Cluster, load_scenario

pytestmark = pytest.mark.django_db(transaction=True)

GFD = {"nvidia.com/gpu.product": "Tesla-V100-SXM2-32GB", "nvidia.com/gpu.memory": "32768"}


@pytest.fixture
def fake():
    server = FakeKubernetes(auto_run=True)  # the kubelet runs a bound pod at once
    server.nodes = [node("dgx1-1", 8, labels=GFD), node("dgx1-2", 8, labels=GFD)]
    yield server
    assert server.invalid == []  # every object the portal's agent sent was schema-valid
    server.close()


@pytest.fixture
def monotonic():
    return Monotonic()


@pytest.fixture
def agent(fake, clock, monotonic):
    config = KubernetesConfig(host=fake.url, node_refresh_s=0, watch_timeout_s=5,
                              ingress_host="gpu.example.org")  # fmt: skip
    made = KubernetesAgent(config, clock=clock, monotonic=monotonic)
    yield made
    made.close()


@pytest.fixture
def k8s(agent) -> Cluster:
    return Cluster(agent)


def job_pods(fake) -> dict[tuple[str, str], str]:
    """(project, pod name) -> node of every job pod on the fake cluster."""
    return {(pod["metadata"]["labels"]["allot.io/project"], name): pod["spec"].get("nodeName")
            for (ns, name), pod in fake.pods.items() if ns != "allot-system"}  # fmt: skip


def planned() -> dict[tuple[str, str], str]:
    """(project, pod name) -> node of every pod the database says is placed."""
    return {(job.project.name, f"{job.name}-{index}"): pod["node"]
            for job in Job.objects.filter(status__in=HOLDING).select_related("project")
            for index, pod in enumerate(job.placement)}  # fmt: skip


def reserved(fake) -> set[tuple[str, str]]:
    """(node, device) of every reservation pod on the fake cluster."""
    return {(pod["spec"]["nodeName"], pod["metadata"]["labels"]["allot.io/device"])
            for (ns, _), pod in fake.pods.items() if ns == "allot-system"}  # fmt: skip


def shared_devices() -> set[tuple[str, str]]:
    """(node, device) of every device the database says fractional jobs share."""
    placements = Job.objects.filter(status__in=HOLDING).values_list("placement", flat=True)
    return {(pod["node"], str(device)) for placement in placements for pod in placement
            if pod["share"] < 1 for device in pod["devices"]}  # fmt: skip


def settle(k8s, agent, fake):
    k8s.settle()
    assert agent.watcher.wait_for(fake.rv)
    k8s.cycle()  # the pods' phases reach the rows


def test_tr4858_through_the_portal_creates_binds_and_deletes_the_planned_pods(
    k8s, agent, fake, monkeypatch
):
    scenario = load_scenario("tr4858.json")
    for project in scenario["projects"]:
        k8s.project(project["name"], project["quota"])
    k8s.cycle()
    nodes = {n.name: (n.gpus, n.gpu_product, n.gpu_memory_bytes) for n in Node.objects.all()}
    assert nodes == dict.fromkeys(("dgx1-1", "dgx1-2"), (8, "Tesla-V100-SXM2-32GB", 32 * 2**30))
    evicted = []
    for action in scenario["steps"]:
        for spec in action.get("submit", []):
            fields = {k: v for k, v in spec.items() if k in ("type", "image", "ports") and v}
            if spec["name"].endswith("jupyter"):
                fields.update(ports=[8888], service_type="ingress")
            k8s.submit(spec["project"], spec["name"], spec["gpus"], **fields)
            before = set(job_pods(fake))
            k8s.settle()  # the report's commands, one at a time (FORMAT.md settling)
            evicted += sorted(before - set(job_pods(fake)))
        for spec in action.get("delete", []):
            k8s.delete(spec["project"], spec["name"])
            k8s.settle()
        settle(k8s, agent, fake)
        if "expect" in action:
            want = action["expect"]["allocated"]
            assert {p: k8s.allocated().get(p, 0) for p in want} == want
            assert job_pods(fake) == planned()  # exactly the planned pods, on the planned nodes
            holding = Job.objects.filter(status__in=HOLDING)
            assert {job.status for job in holding} == {Status.RUNNING}  # pods run: so do jobs
            assert shared_devices() <= reserved(fake)  # each held by a reservation pod
    # §4.9's reclaim took b-4-gg and c-4-gg's pods away (KAI's victims, R9) and the deletions
    # of team-d's jobs removed theirs
    assert ("team-b", "b-4-gg-0") in evicted and ("team-c", "c-4-gg-0") in evicted
    assert not [key for key in job_pods(fake) if key[0] == "team-d"]
    jupyter = k8s.job("team-a", "a-1-1-jupyter")
    assert ("allot-team-a", "a-1-1-jupyter") in fake.services
    assert ("allot-team-a", "a-1-1-jupyter") in fake.ingresses
    monkeypatch.setattr("portal.scheduling.agent._agent", agent)  # the process's agent
    assert job_urls(jupyter) == [
        {"port": 8888, "url": "https://gpu.example.org/team-a-a-1-1-jupyter-8888"}
    ]


def test_job_states_follow_pod_phases_with_the_reason_in_the_events(k8s, agent, fake):
    k8s.project("team-a", 4)
    k8s.cycle()
    k8s.submit("team-a", "oom", 1)
    k8s.submit("team-a", "done", 1)
    settle(k8s, agent, fake)
    assert k8s.job("team-a", "oom").status == Status.RUNNING
    fake.set_pod_status("allot-team-a", "oom-0", "Failed", terminated="OOMKilled", exit_code=137)
    fake.set_pod_status("allot-team-a", "done-0", "Succeeded", terminated="Completed")
    assert agent.watcher.wait_for(fake.rv)
    k8s.cycle()
    oom = k8s.job("team-a", "oom")
    assert oom.status == Status.FAILED
    assert "OOMKilled (exit code 137)" in oom.events.get(kind="failed").message
    assert k8s.job("team-a", "done").status == Status.SUCCEEDED
    k8s.cycle()  # the finished jobs' pods are deleted
    assert job_pods(fake) == {}


def test_an_unreachable_api_server_keeps_submissions_and_plans_once_synced(
    k8s, agent, fake, monotonic
):
    k8s.project("team-a", 4)
    k8s.cycle()
    fake.go_down()
    k8s.submit("team-a", "queued", 2)  # accepted: the database is the source of truth
    result = k8s.cycle()  # a partial view decides nothing: unseen pods may hold GPUs (issue 40)
    assert result.status == "unsynced" and not result.decisions
    assert k8s.job("team-a", "queued").status == Status.PENDING
    problem = build_full_overview()["cluster_problem"]
    assert problem.startswith("Kubernetes API server unreachable")
    assert Node.objects.filter(ready=True).count() == 2  # unknown is not gone
    fake.come_up()
    monotonic.now += 60
    deadline = time.monotonic() + 10
    while k8s.cycle().status == "unsynced":  # until the watch, woken, has listed again
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert job_pods(fake) == {("team-a", "queued-0"): "dgx1-1"}
    assert agent.watcher.wait_for(fake.rv)
    k8s.cycle()
    assert k8s.job("team-a", "queued").status == Status.RUNNING
    assert build_full_overview()["cluster_problem"] == ""
    assert build_full_overview()["simulated"] is False  # the agent's word, not a setting's


def test_a_500_in_the_middle_of_a_gang_leaves_no_pod_then_it_starts(k8s, agent, fake, monotonic):
    k8s.project("team-a", 16)
    k8s.cycle()
    fake.fail_binding = {"dist-1"}
    k8s.submit("team-a", "dist", 8, pods=2)
    k8s.cycle()  # the start after the commit failed ...
    assert job_pods(fake) == {}
    k8s.cycle()  # ... and that job alone backs off: the cluster is fine (issue 25 item 1)
    assert build_full_overview()["cluster_problem"] == ""
    assert "500" in agent.observe().jobs[("team-a", "dist")].message
    fake.fail_binding = set()
    monotonic.now += 60
    k8s.cycle()
    assert job_pods(fake) == {("team-a", "dist-0"): "dgx1-1", ("team-a", "dist-1"): "dgx1-2"}


def test_a_cordon_in_the_cluster_stops_new_placements_on_that_node(k8s, fake):
    fake.nodes[0]["spec"]["unschedulable"] = True
    k8s.project("team-a", 16)
    k8s.submit("team-a", "one", 1)
    k8s.cycle()
    k8s.cycle()
    assert Node.objects.get(name="dgx1-1").cordoned_in_cluster
    assert k8s.job("team-a", "one").placement[0]["node"] == "dgx1-2"


@override_settings(ALLOT_AGENT="kubernetes", ALLOT_K8S_HOST="http://127.0.0.1:9")
def test_allot_agent_kubernetes_builds_the_kubernetes_agent_from_settings():
    from django.conf import settings

    made = _build_agent(settings.ALLOT_AGENT)
    assert isinstance(made, KubernetesAgent) and made.config.host == "http://127.0.0.1:9"
    assert made.supports_shell and not made.simulated
    assert made.sessions.get("team-a", "nb").token == session_token(session_secret(), "team-a",
                                                                     "nb")  # fmt: skip


def test_silence_is_unknown_on_kubernetes_but_restarts_still_flag_a_stuck_job(
    k8s, agent, fake, clock
):
    """The agent measures no output activity, so only the restart rule can find a stuck job."""
    k8s.project("team-a", 4, stuck_after_s=60)
    k8s.cycle()
    k8s.submit("team-a", "quiet", 1)
    settle(k8s, agent, fake)
    clock.advance(3600)
    k8s.cycle()
    assert k8s.job("team-a", "quiet").stuck is False
    fake.set_pod_status("allot-team-a", "quiet-0", "Running", running=True, restarts=3)
    assert agent.watcher.wait_for(fake.rv)
    k8s.cycle()
    assert k8s.job("team-a", "quiet").stuck is True
