"""The scenario format's topology fields (issue 38, docs/scenarios.md): node labels, levels per
pool, a job's constraint and `expect.domains`; bad values refused naming the field."""

from __future__ import annotations

import pytest

from scheduler_tools.scenario import ScenarioError, parse_scenario, replay


def scenario(**changes) -> dict:
    data = {
        "nodes": [
            {"name": f"n{i}", "gpus": 1, "labels": {"example.com/rack": f"r{i // 2}"}}
            for i in range(4)
        ],
        "topology": {"default": ["example.com/rack"]},
        "projects": [{"name": "team-a", "quota": 4}],
        "steps": [
            {"submit": [{"name": "one", "project": "team-a", "gpus": 1}]},
            {
                "submit": [
                    {
                        "name": "gang",
                        "project": "team-a",
                        "gpus": 1,
                        "pods": 2,
                        "topology": {"required": "rack"},
                    }
                ]
            },
            {"expect": {"domains": {"team-a/gang": {"rack": ["r1"]}}}},
        ],
    }
    for path, value in changes.items():
        target = data
        *parents, last = path.split(".")
        for key in parents:
            target = target[int(key)] if key.isdigit() else target[key]
        target[last] = value
    return data


def test_r23_1_labels_levels_and_a_constraint_reach_the_core_and_domains_are_checked():
    parsed = parse_scenario(scenario())
    assert parsed.nodes[2].label("example.com/rack") == "r1"
    assert parsed.topology == {"default": ("example.com/rack",)}
    assert replay(parsed).failures == []


def test_r23_1_expect_domains_fails_when_the_job_runs_elsewhere():
    data = scenario(**{"steps.2.expect": {"domains": {"team-a/gang": {"rack": ["r0"]}}}})
    assert replay(parse_scenario(data)).failures == [
        "step 2: team-a/gang runs in rack ['r1'], want ['r0']"
    ]


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("nodes.0.labels", ["rack"], "nodes[0].labels: must be an object of label: value"),
        ("nodes.0.labels", {"rack": 3}, "nodes[0].labels.rack: must be a string, got 3"),
        ("topology", {"gpu-b": ["rack"]}, "topology.gpu-b: no node is in pool 'gpu-b'"),
        ("topology", {"default": []}, "topology.default: must be a non-empty list of label keys"),
        ("topology", {"default": ["a", "a"]}, "topology.default: a level is listed twice"),
        (
            "steps.1.submit.0.topology",
            {"required": "zone"},
            "steps[1].submit[0].topology.required: 'zone' is not a level of any pool",
        ),
        (
            "steps.1.submit.0.topology",
            {"within": "rack"},
            "steps[1].submit[0].topology: unknown field(s) within",
        ),
        (
            "steps.1.submit.0.topology",
            "rack",
            "steps[1].submit[0].topology: must be an object with required or preferred",
        ),
    ],
)
def test_r23_1_a_bad_topology_field_is_refused_naming_it(path, value, message):
    with pytest.raises(ScenarioError) as error:
        parse_scenario(scenario(**{path: value}))
    assert str(error.value) == message
