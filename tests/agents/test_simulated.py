"""The simulated agent: phases over time, logs, utilization, and rebuilding it from specs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agents.base import JobSpec, PodSpec
from agents.simulated import SimulatedAgent

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


class Clock:
    """A frozen clock the test moves by hand."""

    def __init__(self, now: datetime = T0):
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def spec(name="j1", duration=None, started=T0, devices=(0,), node="n1", **kw) -> JobSpec:
    return JobSpec(
        project="team-a", name=name, placement=(PodSpec(node, devices),), started_at=started,
        sim_duration_s=duration, **kw,
    )  # fmt: skip


@pytest.fixture
def clock():
    return Clock()


def test_it_is_container_creating_until_the_start_delay_has_passed(clock):
    agent = SimulatedAgent(start_delay_s=5, clock=clock)
    agent.start(spec())
    assert agent.observe().jobs[("team-a", "j1")].phase == "ContainerCreating"
    clock.advance(5)
    assert agent.observe().jobs[("team-a", "j1")].phase == "Running"


def test_it_runs_until_stopped_when_the_job_gives_no_duration(clock):
    agent = SimulatedAgent(clock=clock)
    agent.start(spec())
    clock.advance(10 * 24 * 3600)
    status = agent.observe().jobs[("team-a", "j1")]
    assert status.phase == "Running"
    assert status.progress is None
    agent.stop("team-a", "j1")
    assert agent.observe().jobs == {}


def test_it_succeeds_once_sim_duration_s_has_run_after_the_delay(clock):
    agent = SimulatedAgent(start_delay_s=2, clock=clock)
    agent.start(spec(duration=60))
    clock.advance(61)
    status = agent.observe().jobs[("team-a", "j1")]
    assert (status.phase, status.progress) == ("Running", pytest.approx(59 / 60))
    clock.advance(1)
    status = agent.observe().jobs[("team-a", "j1")]
    assert (status.phase, status.progress, status.utilization) == ("Succeeded", 1.0, None)


def test_every_figure_it_reports_is_marked_simulated(clock):
    agent = SimulatedAgent(clock=clock)
    agent.start(spec(devices=(0, 1)))
    seen = agent.observe()
    status = seen.jobs[("team-a", "j1")]
    assert seen.simulated and status.simulated
    assert 0.55 <= status.utilization <= 0.97
    (node,) = seen.nodes
    assert node.simulated and set(node.device_utilization) == {0, 1}
    assert all(url["simulated"] for url in agent.urls(spec(ports=(8888,))))


def test_fractional_pods_on_one_device_add_their_shares(clock):
    agent = SimulatedAgent(clock=clock)
    agent.start(JobSpec("p", "a", (PodSpec("n1", (3,), 0.5),), T0, gpus=0.5))
    agent.start(JobSpec("p", "b", (PodSpec("n1", (3,), 0.5),), T0, gpus=0.5))
    (node,) = agent.observe().nodes
    jobs = agent.observe().jobs
    expected = 0.5 * jobs[("p", "a")].utilization + 0.5 * jobs[("p", "b")].utilization
    assert node.device_utilization[3] == pytest.approx(expected, abs=0.002)


def test_a_new_agent_started_from_the_same_specs_sees_exactly_the_same_cluster(clock):
    """The DB is the source of truth: specs carry their start time, so a rebuild is exact."""
    specs = [spec("a", duration=30), spec("b", started=T0 + timedelta(seconds=20)), spec("c")]
    first = SimulatedAgent(start_delay_s=3, clock=clock)
    for s in specs:
        first.start(s)
    clock.advance(40)
    rebuilt = SimulatedAgent(start_delay_s=3, clock=clock)
    for s in specs:
        rebuilt.start(s)
    assert rebuilt.observe() == first.observe()
    assert [rebuilt.logs(s) for s in specs] == [first.logs(s) for s in specs]


def test_its_logs_read_like_a_training_run_with_epoch_loss_and_eta(clock):
    agent = SimulatedAgent(clock=clock)
    job = spec(duration=600, image="pytorch:24.01")
    clock.advance(125)
    lines = agent.logs(job)
    assert "pulled pytorch:24.01" in lines[0]
    assert "started on n1 GPU 0" in lines[1]
    assert len(lines) == 2 + 12  # banner + one line per 10 s
    assert "epoch 3/10" in lines[-1] and "loss " in lines[-1] and "ETA 0:08:00" in lines[-1]


def test_its_logs_are_the_same_for_the_same_job_and_differ_between_jobs(clock):
    agent = SimulatedAgent(clock=clock)
    clock.advance(300)
    assert agent.logs(spec("a")) == agent.logs(spec("a"))
    losses = {line.split("loss ")[1] for line in agent.logs(spec("a"))[2:]}
    other = {line.split("loss ")[1] for line in agent.logs(spec("b"))[2:]}
    assert losses != other


def test_the_loss_falls_over_a_long_run(clock):
    agent = SimulatedAgent(clock=clock)
    clock.advance(3600)
    lines = agent.logs(spec(), tail=1000)[2:]
    first, last = (float(line.split("loss ")[1].split()[0]) for line in (lines[0], lines[-1]))
    assert last < first / 2


def test_tail_keeps_only_the_last_lines_and_a_finished_job_says_so(clock):
    agent = SimulatedAgent(clock=clock)
    job = spec(duration=100)
    clock.advance(1000)
    lines = agent.logs(job, tail=3)
    assert len(lines) == 3
    assert "finished after 0:01:40 (Succeeded)" in lines[-1]
    assert agent.logs(job, tail=0) == []


def test_a_job_still_being_created_has_no_logs(clock):
    agent = SimulatedAgent(start_delay_s=10, clock=clock)
    assert agent.logs(spec()) == []


def test_interactive_jobs_announce_their_ports_and_get_stable_urls(clock):
    agent = SimulatedAgent(clock=clock)
    job = spec(type="interactive", ports=(8888,))
    clock.advance(30)
    assert "server listening on port 8888" in agent.logs(job)[2]
    (url,) = agent.urls(job)
    assert url["port"] == 8888 and url["url"].startswith("http://n1.sim.allot.local:3")
    assert agent.urls(job) == [url]


def test_starting_a_job_again_with_a_new_placement_moves_it(clock):
    agent = SimulatedAgent(clock=clock)
    agent.start(spec(node="n1"))
    agent.start(spec(node="n2"))
    (status,) = agent.observe().jobs.values()
    assert [pod.node for pod in status.pods] == ["n2"]


def test_it_refuses_a_negative_start_delay():
    with pytest.raises(ValueError, match="start_delay_s"):
        SimulatedAgent(start_delay_s=-1)
