"""`allot submit --cpu/--memory/--cpu-limit/--memory-limit/--gpu-memory` (Run:AI's spellings,
issue 26) against a live portal: the quantities reach the job, a bad one is named as the API
names it, and `allot get` shows them."""

from __future__ import annotations

import json

import pytest

from portal.jobs.models import Job
from tests.cli.test_allot_command import allot  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def test_runai_spellings_reach_the_job_and_allot_get_shows_them(allot):  # noqa: F811
    done = allot("submit", "train-1", "-p", "team-a", "--cpu", "500m", "--memory", "16Gi",
                 "--cpu-limit", "2", "--memory-limit", "20Gi")  # fmt: skip
    assert done.returncode == 0, done.stderr
    job = Job.objects.get(name="train-1")
    assert (job.cpu_millis, job.memory_bytes, job.cpu_limit_millis, job.memory_limit_bytes) == (
        500, 16 * 2**30, 2000, 20 * 2**30)  # fmt: skip
    assert float(job.gpus) == 1.0  # -g left out: one GPU, as before
    got = allot("get", "train-1", "-p", "team-a")
    assert "PER POD: cpu 500m (limit 2), memory 16Gi (limit 20Gi)" in got.stdout, got.stdout


def test_gpu_memory_asks_for_a_fraction_and_gpu_zero_with_cpu_is_cpu_only(allot):  # noqa: F811
    assert allot("submit", "frac", "-p", "team-a", "--gpu-memory", "8Gi").returncode == 0
    body = json.loads(allot("get", "frac", "-p", "team-a", "--json").stdout)
    assert body["gpu_memory"] == "8Gi" and 0 < body["gpus"] < 1
    done = allot("submit", "prep", "-p", "team-a", "-g", "0", "--cpu", "4")
    assert done.returncode == 0, done.stderr
    assert (float(Job.objects.get(name="prep").gpus), Job.objects.get(name="prep").cpu_millis) == (
        0.0, 4000)  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--cpu", "-1"), "cpu: '-1' is not a CPU quantity (cores, e.g. 2 or 500m)"),
        (("--memory", "16GB"), "memory: '16GB' is not a memory quantity"),
        (("--cpu", "4", "--cpu-limit", "2"), "cpu_limit: must be at least the cpu request"),
        (("-g", "1", "--gpu-memory", "8Gi"), "gpu_memory: give gpus or gpu_memory, not both"),
        (("-g", "0"), "gpus: must be greater than 0, or 0 for a CPU-only job"),
    ],
)
def test_a_bad_request_is_named_as_the_api_names_it(allot, flags, said):  # noqa: F811
    failed = allot("submit", "bad", "-p", "team-a", *flags)
    assert failed.returncode != 0
    assert said in failed.stderr, failed.stderr
    assert "Traceback" not in failed.stderr
    assert not Job.objects.filter(name="bad").exists()
