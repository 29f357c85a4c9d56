"""GPU utilization as a real dcgm-exporter reports it, through the Kubernetes agent to the overview.

The exporter's text has its default counters (etc/default-counters.csv: clocks, temperatures,
power, energy as a counter, utilizations, framebuffer memory, XID errors) and the labels it puts
on every sample: `gpu`, `UUID`, `device`, `modelName`, `Hostname`, `DCGM_FI_DRIVER_VERSION`, and
for a device a pod holds (kubelet pod-resources) `container`, `namespace` and `pod`.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agents.kubernetes.agent import KubernetesAgent
from agents.kubernetes.inventory import KubernetesConfig
from portal.dashboards.overview import build_full_overview
from portal.jobs.models import Status
from tests.portal.scheduling.conftest import Cluster
from tests.portal.scheduling.test_kubernetes_cycle import fake, monotonic  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

COUNTERS = (  # (field, type, help, value for a busy device, value for an idle one)
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", 1530, 135),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", 877, 877),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", 41, 30),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", 63, 34),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", 251.3, 43.5),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
     "Total energy consumption since boot (in mJ).", 93401237852, 4412345),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", 0, 0),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", 87, 2),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", 45, 0),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", 0, 0),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", 0, 0),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", 0, 0),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", 2190, 32000),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", 30310, 500),
)  # fmt: skip


def exporter_text(devices: dict[tuple[str, int], tuple[str, str] | None], busy: set) -> str:
    """dcgm-exporter's page for `devices` ((node, index) -> (namespace, pod) or None)."""
    lines = []
    for field, kind, text, busy_value, idle_value in COUNTERS:
        lines += [f"# HELP {field} {text}", f"# TYPE {field} {kind}"]
        for (node, index), holder in sorted(devices.items()):
            labels = (f'gpu="{index}",UUID="GPU-{node}-{index:04d}-6e52",device="nvidia{index}",'
                      f'modelName="Tesla V100-SXM2-32GB",Hostname="{node}",'
                      'DCGM_FI_DRIVER_VERSION="535.104.05"')  # fmt: skip
            if holder:
                labels += f',container="main",namespace="{holder[0]}",pod="{holder[1]}"'
            value = busy_value if (node, index) in busy else idle_value
            lines.append(f"{field}{{{labels}}} {value}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def exporter():
    page = {"text": ""}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            data = page["text"].encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield page, f"http://127.0.0.1:{server.server_port}/metrics"
    server.shutdown()


@pytest.fixture
def k8s(fake, clock, monotonic, exporter):  # noqa: F811
    config = KubernetesConfig(host=fake.url, node_refresh_s=0, watch_timeout_s=5,
                              dcgm_url=exporter[1])  # fmt: skip
    agent = KubernetesAgent(config, clock=clock, monotonic=monotonic)
    yield Cluster(agent)
    agent.close()


def test_dcgm_exporter_text_gives_device_and_job_utilization_and_the_idle_job(k8s, exporter):
    page, _ = exporter
    k8s.project("team-a", 4)
    k8s.submit("team-a", "busy", gpus=1)
    k8s.submit("team-a", "idle", gpus=1)
    k8s.settle()
    assert {k8s.job("team-a", n).status for n in ("busy", "idle")} == {Status.RUNNING}
    devices: dict[tuple[str, int], tuple[str, str] | None] = {
        (node, index): None for node in ("dgx1-1", "dgx1-2") for index in range(8)
    }
    busy = set()
    for name in ("busy", "idle"):
        job = k8s.job("team-a", name)
        (pod,) = job.placement
        (index,) = pod["devices"]
        devices[(pod["node"], index)] = ("allot-team-a", f"{name}-0")
        if name == "busy":
            busy.add((pod["node"], index))
    page["text"] = exporter_text(devices, busy)
    k8s.cycle()  # observes the exporter's figures

    overview = build_full_overview()
    assert overview["simulated"] is False
    running = {job["name"]: job["utilization"] for job in overview["running"]}
    assert running == {"busy": pytest.approx(0.87), "idle": pytest.approx(0.02)}
    assert [job["name"] for job in overview["attention"]["idle"]] == ["idle"]
    shown = {(node["name"], device["index"]): device["utilization"]
             for node in overview["nodes"] for device in node["devices"]}  # fmt: skip
    for key in devices:
        assert shown[key] == pytest.approx(0.87 if key in busy else 0.02), key


def test_dcgm_framebuffer_used_is_each_devices_and_jobs_gpu_memory_in_bytes(k8s, exporter):
    page, _ = exporter
    k8s.project("team-a", 4)
    k8s.submit("team-a", "busy", gpus=2)
    k8s.submit("team-a", "idle", gpus=1)
    k8s.settle()
    devices: dict[tuple[str, int], tuple[str, str] | None] = {
        (node, index): None for node in ("dgx1-1", "dgx1-2") for index in range(8)
    }
    busy = set()
    for name in ("busy", "idle"):
        (pod,) = k8s.job("team-a", name).placement
        for index in pod["devices"]:
            devices[(pod["node"], index)] = ("allot-team-a", f"{name}-0")
            if name == "busy":
                busy.add((pod["node"], index))
    page["text"] = exporter_text(devices, busy)
    k8s.cycle()

    overview = build_full_overview()
    used = {job["name"]: job["gpu_memory_used_bytes"] for job in overview["running"]}
    assert used == {"busy": 2 * 30310 * 2**20, "idle": 500 * 2**20}  # two devices at 30310 MiB
    shown = {(node["name"], device["index"]): device["memory_used_bytes"]
             for node in overview["nodes"] for device in node["devices"]}  # fmt: skip
    for key in devices:
        assert shown[key] == (30310 if key in busy else 500) * 2**20, key
    page["text"] = ""  # the exporter reports nothing: unknown, never a made-up 0
    k8s.cycle()
    overview = build_full_overview()
    assert {job["gpu_memory_used_bytes"] for job in overview["running"]} == {None}
    assert {d["memory_used_bytes"] for n in overview["nodes"] for d in n["devices"]} == {None}
