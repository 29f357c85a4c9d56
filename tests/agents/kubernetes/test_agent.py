"""The Kubernetes agent against the fake API server: pod phases and container states become job
phases, the watch survives expiry (410 Gone) without losing a transition, an unreachable API
server is retried with back-off, a failure in the middle of a gang leaves none of its pods, and
logs, Services, Ingresses, reservations and DCGM utilization work as documented."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agents.base import JobSpec, PodSpec
from agents.kubernetes.status import job_status, pod_phase
from tests.agents.kubernetes.conftest import make_agent
from tests.agents.kubernetes.fake_api import FakeKubernetes

NOW = datetime(2026, 11, 1, tzinfo=UTC)
NS = "allot-team-a"


def job(name="train", *, pods=1, gpus=1.0, devices=(0,), share=1.0, **fields) -> JobSpec:
    placement = tuple(PodSpec(f"dgx1-{i + 1}", devices, share) for i in range(pods))
    return JobSpec("team-a", name, placement, NOW, gpus=gpus, pods=pods, **fields)


def synced(agent, cluster) -> None:
    assert agent.watcher.wait_for(cluster.rv), "the watch did not catch up"


def observed(agent, cluster, key=("team-a", "train")):
    synced(agent, cluster)
    return agent.observe().jobs[key]


# ---------------------------------------------------------------------- phases (pure)
def pod(phase="Pending", index=0, **state) -> dict:
    fake = FakeKubernetes.__new__(FakeKubernetes)
    made = {"metadata": {"name": f"train-{index}", "labels": {"allot.io/pod-index": str(index)}},
            "spec": {"nodeName": "dgx1-1", "containers": [{"image": "x"}]}}  # fmt: skip
    fake._set_status(made, phase, **state)
    return made


@pytest.mark.parametrize(
    ("made", "want"),
    [
        (pod("Pending", waiting="ContainerCreating"), ("ContainerCreating", "")),
        (pod("Running", running=True), ("Running", "")),
        (pod("Succeeded", terminated="Completed"), ("Succeeded", "")),
        (pod("Pending", waiting="ImagePullBackOff", message='pull "nope:1" failed'),
         ("Failed", 'pod train-0: ImagePullBackOff: pull "nope:1" failed')),
        (pod("Pending", waiting="ErrImagePull"), ("Failed", "pod train-0: ErrImagePull")),
        (pod("Failed", terminated="OOMKilled", exit_code=137),
         ("Failed", "pod train-0: OOMKilled (exit code 137)")),
        (pod("Failed", terminated="Error", exit_code=2),
         ("Failed", "pod train-0: Error (exit code 2)")),
        (pod("Running", waiting="CrashLoopBackOff", restarts=5),
         ("Failed", "pod train-0: CrashLoopBackOff")),
    ],
)  # fmt: skip
def test_pod_phases_and_container_states_become_allot_phases(made, want):
    assert pod_phase(made) == want


def test_an_oom_killed_container_that_restarts_fails_the_job_with_the_reason():
    made = pod("Running", running=True, restarts=1)
    made["status"]["containerStatuses"][0]["lastState"] = {
        "terminated": {"reason": "OOMKilled", "exitCode": 137}
    }
    assert pod_phase(made) == ("Failed", "pod train-0: OOMKilled, out of memory (exit code 137)")


def test_a_gang_is_running_only_when_every_pod_runs_and_fails_when_one_fails():
    running, waiting = pod("Running", 0, running=True), pod("Pending", 1)
    assert job_status("team-a", "train", [running, waiting]).phase == "ContainerCreating"
    both = job_status("team-a", "train", [running, pod("Running", 1, running=True, restarts=2)])
    assert (both.phase, both.restarts, [p.index for p in both.pods]) == ("Running", 2, [0, 1])
    failed = job_status("team-a", "train", [running, pod("Failed", 1, terminated="Error")])
    assert failed.phase == "Failed" and "train-1" in failed.message


# ---------------------------------------------------------------------- the agent
def test_a_started_job_follows_the_phases_its_pods_report(agent, cluster):
    agent.start(job())
    assert cluster.bindings == [(NS, "train-0", "dgx1-1")]
    assert observed(agent, cluster).phase == "ContainerCreating"
    cluster.set_pod_status(NS, "train-0", "Running", running=True)
    status = observed(agent, cluster)
    assert (status.phase, status.pods[0].node) == ("Running", "dgx1-1")
    assert status.utilization is None  # no DCGM exporter: unknown, never made up
    cluster.set_pod_status(NS, "train-0", "Succeeded", terminated="Completed")
    assert observed(agent, cluster).phase == "Succeeded"


def test_the_inventory_comes_with_each_observation(agent, cluster):
    nodes = {n.name: n for n in agent.observe().nodes}
    assert (nodes["dgx1-1"].gpus, nodes["dgx1-1"].gpu_memory_bytes) == (8, 32768 * 2**20)


def test_a_watch_that_expires_is_relisted_without_losing_a_transition(agent, cluster):
    agent.start(job())
    cluster.set_pod_status(NS, "train-0", "Running", running=True)
    assert observed(agent, cluster).phase == "Running"
    relists = agent.watcher.relists
    cluster.expire_watches()  # the watch ends and its history is compacted away ...
    cluster.set_pod_status(NS, "train-0", "Succeeded", terminated="Completed")  # ... meanwhile
    assert observed(agent, cluster).phase == "Succeeded"
    assert agent.watcher.relists == relists + 1  # resumed, got 410 Gone, listed again
    watches = [path for _, path in cluster.requests if "watch=true" in path.lower()]
    assert all("resourceVersion=" in path for path in watches)


def test_the_watch_keeps_pods_as_json_without_building_a_model_of_each(agent, cluster,
                                                                    monkeypatch):  # fmt: skip
    """Profiled during make bench-k8s, the client's V1Pod of every event (dateutil parsing its
    timestamps) was a quarter of the worker's CPU; the agent reads only the JSON."""
    from kubernetes.client import ApiClient

    built: list[str] = []
    deserialize = ApiClient.deserialize

    def counted(self, response, response_type):
        built.append(response_type)
        return deserialize(self, response, response_type)

    agent.start(job())
    assert observed(agent, cluster).phase == "ContainerCreating"
    monkeypatch.setattr(ApiClient, "deserialize", counted)
    cluster.set_pod_status(NS, "train-0", "Running", running=True)
    cluster.set_pod_status(NS, "train-0", "Succeeded", terminated="Completed")
    assert observed(agent, cluster).phase == "Succeeded"
    assert "V1Pod" not in built, built


def test_an_unreachable_api_server_is_retried_with_backoff_and_reported(agent, cluster, clock):
    agent.start(job("first"))
    cluster.set_pod_status(NS, "first-0", "Running", running=True)
    assert observed(agent, cluster, ("team-a", "first")).phase == "Running"
    cluster.go_down()
    seen = agent.observe()
    assert "unreachable" in seen.problem and "retrying in 1 s" in seen.problem
    assert seen.nodes == ()  # unknown, not gone
    assert seen.jobs[("team-a", "first")].phase == "Running"  # as last seen
    agent.start(job("second", devices=(1,)))  # accepted while the server is down: kept for later
    requests = len(cluster.requests)
    clock.now += 0.5
    assert "retrying" in agent.observe().problem
    assert len(cluster.requests) == requests  # backing off: no attempt yet
    clock.now += 1
    assert "retrying in 2 s" in agent.observe().problem  # tried again, failed again, waits longer
    cluster.come_up()
    clock.now += 2
    agent.observe()
    assert (NS, "second-0") in cluster.pods  # the start owed was carried out
    synced(agent, cluster)  # the watch, woken from its own back-off, lists again
    seen = agent.observe()
    assert seen.problem == ""
    assert ("team-a", "second") in seen.jobs


def test_a_500_in_the_middle_of_a_gang_leaves_no_pod_and_backs_that_job_off(agent, cluster, clock):
    cluster.fail_binding = {"dist-1"}
    agent.start(job("dist", pods=2, gpus=8, devices=tuple(range(8))))
    assert not [key for key in cluster.pods if key[0] == NS]
    seen = agent.observe()
    assert seen.problem == ""  # one object failed, not the cluster (issue 25 item 1)
    assert "500" in seen.jobs[("team-a", "dist")].message
    assert seen.jobs[("team-a", "dist")].phase == "ContainerCreating"
    other = job("other", devices=(7,))  # another job starts meanwhile, on another node
    agent.start(replace(other, placement=(PodSpec("dgx1-3", (7,)),)))
    assert (NS, "other-0") in cluster.pods
    cluster.fail_binding = set()
    clock.now += 1
    seen = agent.observe()
    assert seen.problem == ""
    assert sorted(name for ns, name in cluster.pods if ns == NS) == [
        "dist-0", "dist-1", "other-0"]  # fmt: skip


def test_a_start_the_api_rejects_for_good_fails_the_job_with_the_message(agent, cluster):
    cluster.forbid_create = {"bad-0"}  # a ResourceQuota of the namespace says no
    agent.start(job("bad"))
    status = observed(agent, cluster, ("team-a", "bad"))
    assert status.phase == "Failed"
    assert "403" in status.message and "exceeded quota" in status.message
    assert agent.observe().problem == ""  # the cluster is fine; the job is not


def test_stop_deletes_pods_service_and_ingress(agent, cluster):
    jupyter = job("nb", type="interactive", ports=(8888,), service_type="ingress")
    agent.start(jupyter)
    assert set(cluster.services) == {(NS, "nb")} and set(cluster.ingresses) == {(NS, "nb")}
    assert cluster.ingresses[(NS, "nb")]["spec"]["rules"][0]["host"] == "gpu.example.org"
    assert agent.urls(jupyter) == [{"port": 8888, "url": "https://gpu.example.org/team-a-nb-8888"}]
    agent.stop("team-a", "nb")
    assert (cluster.pods.keys() | cluster.services.keys() | cluster.ingresses.keys()) == set()


def test_logs_are_the_first_pods_tail(agent, cluster):
    agent.start(job())
    assert agent.logs(job()) == []  # still pending: no container to read
    cluster.set_pod_status(NS, "train-0", "Running", running=True)
    cluster.logs[(NS, "train-0")] = [f"epoch {i}" for i in range(10)]
    assert agent.logs(job(), tail=3) == ["epoch 7", "epoch 8", "epoch 9"]
    assert agent.status(job()).phase == "Running"


def test_a_move_deletes_the_old_pods_and_binds_new_ones_once_they_are_gone(agent, cluster):
    agent.start(job())
    synced(agent, cluster)
    moved = JobSpec("team-a", "train", (PodSpec("dgx1-2", (3,)),), NOW)
    agent.start(moved)
    synced(agent, cluster)
    agent.observe()
    assert cluster.pods[(NS, "train-0")]["spec"]["nodeName"] == "dgx1-2"
    assert cluster.deleted == [(NS, "train-0")]


def test_reservations_are_freed_when_no_fraction_uses_the_device(agent, cluster, clock):
    half = job("half", gpus=0.5, devices=(2,), share=0.5)
    agent.start(half)
    reservation = [key for key in cluster.pods if key[0] == "allot-system"]
    assert len(reservation) == 1
    env = cluster.pods[(NS, "half-0")]["spec"]["containers"][0]["env"]
    assert {"name": "ALLOT_GPU_MEMORY_MIB", "value": "16384"} in env
    agent.stop("team-a", "half")
    synced(agent, cluster)
    agent.observe()
    assert reservation[0] in cluster.pods  # kept for a grace period (a new fraction may come)
    clock.now += 31
    synced(agent, cluster)
    agent.observe()
    assert reservation[0] not in cluster.pods


METRICS = """# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",Hostname="dgx1-1",namespace="allot-team-a",pod="train-0",container="main"} 80
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-b",Hostname="dgx1-1"} 0
"""  # noqa: E501


@pytest.fixture
def exporter():
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            data = METRICS.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/metrics"
    server.shutdown()


def test_gpu_utilization_comes_from_the_dcgm_exporter(cluster, clock, exporter):
    agent = make_agent(cluster, clock, dcgm_url=exporter)
    try:
        agent.start(job())
        cluster.set_pod_status(NS, "train-0", "Running", running=True)
        synced(agent, cluster)
        seen = agent.observe()
        assert seen.jobs[("team-a", "train")].utilization == pytest.approx(0.8)
        devices = {n.name: n.device_utilization for n in seen.nodes}
        assert devices["dgx1-1"] == {0: pytest.approx(0.8), 1: 0.0}
        assert seen.simulated is False
    finally:
        agent.close()


def test_the_watch_thread_stops(agent, cluster):
    agent.observe()
    agent.close()
    cluster.expire_watches()
    time.sleep(0.2)
    assert not agent.watcher._thread.is_alive()


def test_a_launch_jupyter_pod_answers_the_portals_proxy_with_a_derived_token(cluster, clock):
    from agents.kubernetes.sessions import KubernetesSessions

    agent = make_agent(cluster, clock, session_secret="s3cret")
    try:
        agent.start(job("nb", type="interactive", ports=(8888,), gpus=0.5, devices=(0,),
                        share=0.5, image="jupyter/base-notebook"))  # fmt: skip
        container = cluster.pods[(NS, "nb-0")]["spec"]["containers"][0]
        session = KubernetesSessions("s3cret").get("team-a", "nb")
        assert container["args"][:2] == ["start-notebook.py",
                                         "--ServerApp.base_url=/sessions/team-a/nb/"]  # fmt: skip
        assert {"name": "JUPYTER_TOKEN", "value": session.token} in container["env"]
        assert session.upstream == "http://nb.allot-team-a.svc:8888/sessions/team-a/nb/"
        assert KubernetesSessions("other").get("team-a", "nb").token != session.token
    finally:
        agent.close()


def test_a_job_with_its_own_command_is_left_alone(cluster, clock):
    agent = make_agent(cluster, clock, session_secret="s3cret")
    try:
        agent.start(job("own", type="interactive", ports=(8888,), command="jupyter lab"))
        container = cluster.pods[(NS, "own-0")]["spec"]["containers"][0]
        assert container["command"] == ["jupyter", "lab"] and "args" not in container
    finally:
        agent.close()


def test_a_shell_in_the_first_pod_through_the_exec_stream(agent, cluster):
    from agents.kubernetes.shell import open_shell

    agent.start(job())
    cluster.set_pod_status(NS, "train-0", "Running", running=True)
    shell = open_shell(agent.api, job(), ("/bin/sh",))
    try:
        shell.resize(120, 40)
        shell.write(b"echo hello from $((6 * 7))\n")
        out = b""
        deadline = time.monotonic() + 5
        while b"hello from 42" not in out and time.monotonic() < deadline:
            out += shell.read(0.2)
        assert b"hello from 42" in out
        shell.write(b"exit 3\n")
        while shell.open and time.monotonic() < deadline:
            shell.read(0.2)
        assert shell.exit_code == 3
    finally:
        shell.close()
    assert cluster.execs == [(NS, "train-0", ["/bin/sh"])]
    assert cluster.resizes == [{"Width": 120, "Height": 40}]
