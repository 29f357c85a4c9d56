"""GPU utilization from NVIDIA's DCGM exporter (`ALLOT_DCGM_URL`), or nothing.

The exporter serves Prometheus text; `DCGM_FI_DEV_GPU_UTIL` is each device's utilization in
percent, labelled with its node (`Hostname`) and index (`gpu`) and, when the exporter maps pods
(kubelet pod-resources), with the `namespace` and `pod` using it. `DCGM_FI_DEV_FB_USED` is each
device's framebuffer memory in use, in MiB (kept in bytes, as every memory amount). Without an
exporter Allot shows utilization and memory as unknown; it never makes a figure up.
"""

from __future__ import annotations

import urllib.request
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

METRIC = "DCGM_FI_DEV_GPU_UTIL"
MEMORY_METRIC = "DCGM_FI_DEV_FB_USED"
MIB = 2**20


@dataclass(frozen=True)
class GpuUtilization:
    """Per-device (node -> index -> 0..1) and per-pod ((namespace, pod) -> [0..1]) utilization,
    and the same of the devices' memory in use, in bytes."""

    devices: dict[str, dict[int, float]] = field(default_factory=dict)
    pods: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    device_memory: dict[str, dict[int, int]] = field(default_factory=dict)
    pod_memory: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    def job(self, namespace: str, pod_names: list[str]) -> float | None:
        """Mean utilization of the devices the job's pods use, None when none is reported."""
        values = [v for pod in pod_names for v in self.pods.get((namespace, pod), ())]
        return sum(values) / len(values) if values else None

    def job_memory(self, namespace: str, pod_names: list[str]) -> int | None:
        """Bytes of memory in use on the devices the job's pods use (a shared device's whole
        use: the exporter names one pod per device), None when none is reported."""
        values = [v for pod in pod_names for v in self.pod_memory.get((namespace, pod), ())]
        return sum(values) if values else None


def parse(text: str) -> GpuUtilization:
    """The figures in one scrape of the exporter."""
    found = GpuUtilization()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == METRIC:
                value = max(0.0, min(1.0, sample.value / 100))
                _put(found.devices, found.pods, sample.labels, value)
            elif sample.name == MEMORY_METRIC:
                _put(found.device_memory, found.pod_memory, sample.labels,
                     max(0, round(sample.value * MIB)))  # fmt: skip
    return found


def _put(devices: dict, pods: dict, labels: dict[str, str], value) -> None:
    node, index = labels.get("Hostname", ""), labels.get("gpu", "")
    if node and index.isdigit():
        devices.setdefault(node, {})[int(index)] = value
    if labels.get("pod"):
        pods.setdefault((labels.get("namespace", ""), labels["pod"]), []).append(value)


def scrape(url: str, timeout_s: float = 2.0) -> GpuUtilization:
    """Read the exporter at `url` (raises OSError when it does not answer)."""
    with urllib.request.urlopen(url, timeout=timeout_s) as answer:
        return parse(answer.read().decode())
