"""Reading traces and quota files: gangs for jobs larger than a node (R6.1), fractional GPUs,
teams missing from the trace, quotas scaled by --vc-scale."""

import pytest

from scheduler_tools.simulate.trace import (
    DEFAULT_TEAM,
    build_nodes,
    parse_nodes,
    read_quotas,
    read_trace,
    scale_nodes,
    split_gang,
)

HEADER = "job_id,submit_time_s,duration_s,gpus,pods,team,user,status,extra\n"


@pytest.mark.parametrize(
    ("gpus", "pods", "expected"),
    [
        (1, None, (1, 1)),
        (8, None, (1, 8)),
        (16, None, (2, 8)),
        (12, None, (2, 6)),
        (20, None, (4, 5)),
        (48, None, (6, 8)),
        (7, None, (1, 7)),
        (0.5, None, (1, 0.5)),
        (8, 4, (4, 2)),
    ],
)
def test_r6_1_jobs_larger_than_a_node_become_gangs_of_equal_pods(gpus, pods, expected):
    assert split_gang(gpus, pods, 8) == expected


def test_reader_sorts_by_submit_time_skips_unusable_rows_and_defaults_the_team(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(
        HEADER
        + "j2,50,10,16,,t1,alice,,x\n"
        + "j1,5,20,0.46,,,,,x\n"
        + "bad,,20,1,,t1,,,x\n"
        + "j3,7,,1,,t1,,,x\n"
    )
    trace = read_trace(path, node_gpus=8)
    assert [j.job_id for j in trace.jobs] == ["j1", "j2"]
    assert trace.skipped == 2
    fraction, gang = trace.jobs
    assert (fraction.team, fraction.gpus_per_pod, fraction.pods) == (DEFAULT_TEAM, 0.46, 1)
    assert (gang.team, gang.user, gang.pods, gang.gpus_per_pod, gang.gpus) == (
        "t1",
        "alice",
        2,
        8,
        16,
    )


def test_round_up_fractions_asks_a_whole_gpu_but_remembers_the_request(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(HEADER + "j1,0,10,0.25,,,,,x\nj2,1,10,2,,,,,x\n")
    trace = read_trace(path, round_up_fractions=True)
    assert [(j.gpus_per_pod, j.requested_gpus) for j in trace.jobs] == [(1.0, 0.25), (2, 2)]


def test_team_column_can_group_by_another_column(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("job_id,submit_time_s,duration_s,gpus,qos\nj1,0,10,1,LS\nj2,0,10,1,BE\n")
    assert [j.team for j in read_trace(path, team_column="qos").jobs] == ["LS", "BE"]


def test_quotas_are_scaled_vc_nodes_times_gpus_per_node(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("team,nodes,gpus\nbig,64,512\nsmall,8,64\ntiny,1,8\n")
    full = read_quotas(path, node_gpus=8, scale=1.0)
    assert {t: (q.nodes, q.gpus) for t, q in full.items()} == {
        "big": (64, 512),
        "small": (8, 64),
        "tiny": (1, 8),
    }
    quarter = read_quotas(path, node_gpus=8, scale=0.25)
    # 64 -> 16, 8 -> 2, 1 -> 0.25 rounds to 0 but a VC keeps at least one node.
    assert {t: (q.nodes, q.gpus) for t, q in quarter.items()} == {
        "big": (16, 128),
        "small": (2, 16),
        "tiny": (1, 8),
    }
    assert scale_nodes(3, 0.5) == 2  # 1.5 rounds half up


def test_node_shapes_and_partitions():
    assert parse_nodes("352x8") == (352, 8)
    with pytest.raises(ValueError):
        parse_nodes("352")
    nodes = build_nodes(4, 8, [("a", 1), ("b", 2)])
    assert [(n.name, n.pool, n.gpus) for n in nodes] == [
        ("n00000", "a", 8),
        ("n00001", "b", 8),
        ("n00002", "b", 8),
        ("n00003", "default", 8),
    ]
    with pytest.raises(ValueError):
        build_nodes(2, 8, [("a", 3)])
