"""The pooled fluid reference (scheduler_tools/simulate/reference.py), checked by hand."""

from scheduler_tools.simulate.reference import pooled_fifo
from scheduler_tools.simulate.trace import read_trace

TRACE = """job_id,submit_time_s,duration_s,gpus,pods,team,user,status
a,0,100,4,,t1,,
b,10,50,2,,t2,,
c,20,10,1,,t1,,
d,30,10,4,,t2,,
huge,40,10,5,,t1,,
"""


def test_greedy_fifo_on_one_pool_of_four_gpus(tmp_path):
    """a holds all 4 GPUs until 100; then b (2) and c (1) start in order, d (4) is skipped and
    starts at 150 when b ends; huge (5 GPUs) never fits the pool and is left out."""
    path = tmp_path / "trace.csv"
    path.write_text(TRACE)
    result = pooled_fifo(read_trace(path, node_gpus=8), capacity=4)
    assert result.jobs == 4
    assert result.avg_queue_s == (0 + 90 + 80 + 120) / 4
    assert result.max_queue_s == 120
    assert result.makespan_s == 160


def test_the_command_line_prints_the_reference(tmp_path, capsys):
    from scheduler_tools.simulate.__main__ import main

    path = tmp_path / "trace.csv"
    path.write_text(TRACE)
    main([str(path), "--nodes", "1x4", "--pooled-reference", "--quiet", "--limit-jobs", "4"])
    out = capsys.readouterr().out
    assert "pooled reference (one pool of 4 GPUs" in out
    assert "avg queue 72 s, max 120 s" in out
