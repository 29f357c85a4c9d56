"""The scenario format's fields of issue 26 (docs/scenarios.md): quantities read with the core's
parser, GPU memory counted by the smallest device, failed devices as a step, and clear errors."""

import json

import pytest

from scheduler.quantity import GIB
from scheduler_tools.scenario import ScenarioError, load_scenario, parse_scenario, replay

BASE = {
    "nodes": [
        {"name": "n1", "gpus": 2, "cpu": "64", "memory": "512Gi", "gpu_memory": "40Gi"},
        {"name": "n2", "gpus": 2, "cpu": 8.5, "memory": "64Gi", "gpu_memory_mib": 81920,
         "failed_devices": [1]},
    ],
    "departments": [{"name": "dept-d", "quota": 4, "cpu_limit": "64500m", "memory_limit": "2Ti"}],
    "projects": [{"name": "team-a", "quota": 4, "cpu_limit": "100", "memory_limit": "1Ti",
                  "department": "dept-d"}],
    "steps": [],
}  # fmt: skip


def scenario(**changes):
    data = json.loads(json.dumps(BASE))
    for path, value in changes.items():
        target = data
        *keys, last = path.split(".")
        for key in keys:
            target = target[int(key)] if key.isdigit() else target[key]
        target[int(last) if last.isdigit() else last] = value
    return data


def test_nodes_and_projects_read_kubernetes_quantities_into_the_core_fields():
    parsed = parse_scenario(scenario())
    n1, n2 = parsed.nodes
    assert (n1.cpu_millis, n1.memory_bytes, n1.gpu_memory_bytes) == (64_000, 512 * GIB, 40 * GIB)
    assert (n2.cpu_millis, n2.memory_bytes, n2.failed_devices) == (8_500, 64 * GIB, (1,))
    project = parsed.projects[0]
    assert (project.cpu_limit_millis, project.memory_limit_bytes) == (100_000, 1024 * GIB)
    department = parsed.departments[0]
    assert (department.cpu_limit_millis, department.memory_limit_bytes) == (64_500, 2048 * GIB)
    assert parsed.smallest_gpu_memory == 40 * GIB


def test_a_gpu_memory_job_counts_as_its_share_of_the_smallest_device_r3_4():
    data = scenario(steps=[
        {"submit": [{"name": "m", "project": "team-a", "gpu_memory": "20Gi", "cpu": "500m",
                     "memory": "1Gi"}]},
        {"expect": {"allocated": {"team-a": 0.5}, "allocated_cpu": {"team-a": "500m"},
                    "allocated_memory": {"team-a": "1Gi"}, "devices": {"team-a/m": [0]},
                    "on_node": {"team-a/m": "n2"}}},  # the fuller (device 1 failed)
    ])  # fmt: skip
    result = replay(parse_scenario(data))
    assert result.failures == []


def test_a_wrong_resource_expectation_is_a_failure_naming_it():
    data = scenario(steps=[
        {"submit": [{"name": "c", "project": "team-a", "gpus": 0, "cpu": 2}]},
        {"expect": {"allocated_cpu": {"team-a": 3}, "devices": {"team-a/c": [0]},
                    "decision_contains": {"team-a/c": "failed"}}},
    ])  # fmt: skip
    failures = replay(parse_scenario(data)).failures
    assert failures == [
        "step 1: CPU of team-a = 2000m, want 3",
        "step 1: team-a/c holds devices [], want [0]",
        "step 1: decisions about team-a/c were [], want 'failed'",
    ]


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("nodes.0.cpu", "lots", "nodes[0].cpu: 'lots' is not a Kubernetes quantity"),
        ("nodes.0.memory", "-1Gi", "nodes[0].memory: Memory cannot be negative"),
        ("nodes.1.failed_devices", [2], "nodes[1].failed_devices: 2 is not a device index"),
        ("projects.0.cpu_limit", "1Gb", "projects[0].cpu_limit: '1Gb' is not a Kubernetes"),
        ("departments.0.cpu_limit", "lots", "departments[0].cpu_limit: 'lots' is not a Kube"),
        ("departments.0.memory_limit", "-1Gi", "departments[0].memory_limit: Memory cannot be"),
        ("steps", [{"submit": [{"name": "j", "project": "team-a", "gpu_memory": "0"}]}],
         "steps[0].submit[0].gpu_memory: must be more than 0"),
        ("steps", [{"submit": [{"name": "j", "project": "team-a", "gpus": 1, "memory": "x"}]}],
         "steps[0].submit[0].memory: 'x' is not a Kubernetes quantity"),
        ("steps", [{"failed_devices": {"n9": [0]}}], "steps[0].failed_devices: unknown node 'n9'"),
    ],
)  # fmt: skip
def test_a_bad_resource_field_is_refused_naming_it(path, value, message):
    with pytest.raises(ScenarioError) as error:
        parse_scenario(scenario(**{path: value}))
    assert message in str(error.value)


def test_a_department_without_cpu_or_memory_limits_has_none():
    data = scenario(departments=[{"name": "dept-d", "quota": 4}])
    department = parse_scenario(data).departments[0]
    assert (department.cpu_limit_millis, department.memory_limit_bytes) == (None, None)


def test_the_scenario_files_of_issue_26_load(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(scenario()))
    assert load_scenario(path).nodes[1].failed_devices == (1,)
