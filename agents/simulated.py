"""The simulated cluster: the embedded default agent, with no containers behind it.

A started job is ContainerCreating for `start_delay_s`, then Running; it runs until it is stopped,
or for its `sim_duration_s` and is then Succeeded. Logs, progress and GPU utilization are generated,
deterministically from the job's name and the clock, and every figure is marked simulated.

The agent's whole state is the set of specs it was started with, and a spec carries its start time,
so phases, logs and utilization are functions of (spec, now): starting again every job the database
says is placed rebuilds the agent exactly after a crash, and any process (the web process serving
logs, a Celery worker running the cycle) computes the same answers.

With `processes` (ALLOT_SIM_PROCESSES, which `make run` turns on), a job with a command is no
longer simulated: its pods run as real, isolated local processes (`agents.processes`), its phase
comes from their exit codes and its logs from their output; the processes' files are shared by
every process of the portal the same way. Its GPU figures stay synthetic (the simulated
devices are not this machine's).
"""

from __future__ import annotations

import contextlib
import math
import random
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import NoReturn

from .base import (
    AgentCounts,
    JobKey,
    JobSpec,
    JobStatus,
    NodeStatus,
    NoShell,
    Observation,
    Phase,
    PodStatus,
)
from .processes import LocalProcesses
from .sessions import JUPYTER_PORT, LocalSessions, SessionNotStarted, session_path

Clock = Callable[[], datetime]
LOG_EVERY_S = 10.0  # one training log line per 10 s of running time
EPOCH_S = 60.0  # a simulated epoch lasts a minute
UTILIZATION_BUCKET_S = 10  # utilization changes every 10 s of wall time


def utc_now() -> datetime:
    """The real clock, timezone-aware (UTC)."""
    return datetime.now(UTC)


def _seed(*parts: object) -> int:
    """A stable integer seed from parts (crc32: unlike hash(), the same in every process)."""
    return zlib.crc32(":".join(str(p) for p in parts).encode())


class SimulatedAgent:
    """A cluster simulated in memory; `clock()` returns the aware current time (tests freeze it).

    It has no containers, so no shells (`supports_shell` is False). `sessions`, when given, runs a
    real local JupyterLab for each interactive job on port 8888; None runs none. `processes`,
    when given, runs each other job that has a command as local processes, one per pod."""

    simulated = True
    supports_shell = False

    def __init__(
        self,
        start_delay_s: float = 0.0,
        clock: Clock = utc_now,
        sessions: LocalSessions | None = None,
        on_session_ready: Callable[[], None] | None = None,
        processes: LocalProcesses | None = None,
    ):
        if start_delay_s < 0:
            raise ValueError(f"start_delay_s must be >= 0, got {start_delay_s}")
        self.start_delay_s = start_delay_s
        self.clock = clock
        self.sessions = sessions  # real local Jupyter servers for interactive port-8888 jobs
        # called once when a session started here first answers (the portal asks for a cycle,
        # so the job says Running then, not at the cycle's next tick)
        self.on_session_ready = on_session_ready
        self.processes = processes  # real local processes for jobs with a command
        self._jobs: dict[JobKey, JobSpec] = {}
        self._lock = threading.Lock()

    # -- the interface -------------------------------------------------------------------------

    def start(self, job: JobSpec) -> None:
        """Run `job` (idempotent; a new placement or start time replaces the old one: a move)."""
        with self._lock:
            self._jobs[job.key] = job
        if self.has_processes(job):  # a refusal is the job's failure, reported by `status`
            with contextlib.suppress(SessionNotStarted):
                self.processes.run(job)
        if self.has_session(job):  # a refusal is the job's failure, reported by `status`
            with contextlib.suppress(SessionNotStarted):
                self.sessions.start(job.project, job.name, job.environment, job.user)
                if self.on_session_ready is not None:
                    threading.Thread(target=self._await_ready, args=(job,), daemon=True,
                                     name=f"allot-ready-{job.name}"[:60]).start()  # fmt: skip

    def _await_ready(self, job: JobSpec, every_s: float = 0.05, patience_s: float = 300.0) -> None:
        """Ask the job's server every `every_s` until it answers, then call `on_session_ready`
        and warm the server up for the lab's first notebook (`LocalSessions.warm`); give up
        when the job is stopped or replaced, its server is gone, or after `patience_s`."""
        deadline = time.monotonic() + patience_s
        while time.monotonic() < deadline:
            with self._lock:
                if self._jobs.get(job.key) != job:
                    return
            if self.sessions.ready(*job.key):
                self.on_session_ready()
                self.sessions.warm(*job.key)
                return
            if self.sessions.get(*job.key) is None:
                return  # it exited or was stopped: `status` says why
            time.sleep(every_s)

    def stop(self, project: str, name: str) -> None:
        """Forget the job (and stop its Jupyter server); unknown jobs are ignored."""
        with self._lock:
            self._jobs.pop((project, name), None)
        if self.sessions is not None:
            self.sessions.stop(project, name)
        if self.processes is not None:
            self.processes.stop(project, name)

    def carry_out(self, stops: Iterable[JobKey], starts: Iterable[JobSpec]) -> None:
        """`stop` each of `stops`, then `start` each of `starts`."""
        for key in stops:
            self.stop(*key)
        for job in starts:
            self.start(job)

    def has_session(self, job: JobSpec) -> bool:
        """True when a real Jupyter server backs this job: interactive, port 8888, sessions on."""
        return self.sessions is not None and job.type == "interactive" and JUPYTER_PORT in job.ports

    def has_processes(self, job: JobSpec) -> bool:
        """True when local processes run this job's pods: processes on, a command, and no
        Jupyter server behind it (a session is its own process)."""
        return self.processes is not None and bool(job.command) and not self.has_session(job)

    def observe(self) -> Observation:
        """Every job started and not stopped, with its phase at `clock()`, and the busy nodes."""
        now = self.clock()
        with self._lock:
            specs = list(self._jobs.values())
        jobs = {spec.key: self.status(spec, now) for spec in specs}
        for key in self.processes.started() if self.processes is not None else ():
            if key not in jobs:  # started by a process that has died, or by another process
                jobs[key] = self._leftover(*key)
        return Observation(at=now, jobs=jobs, nodes=self._nodes(specs, now), simulated=True)

    def explain(self, waiting: Mapping[str, str]) -> None:
        """Nothing to tell: the simulated cluster has no pods that other tools made."""

    def logs(self, job: JobSpec, tail: int = 200) -> list[str]:
        """The job's last `tail` generated log lines at `clock()` (a function of job and time),
        or, for a job its processes run, the last lines they wrote."""
        if self.has_processes(job):
            return self.processes.logs(job.project, job.name, max(0, tail))
        return _log_lines(job, self.clock(), self.start_delay_s, max(0, tail))

    def urls(self, job: JobSpec) -> list[dict]:
        """A simulated address per port on the first pod's node (no server answers there); a
        Jupyter job's port 8888 is its real server, opened through the portal's proxy path."""
        if not job.placement:
            return []
        node = job.placement[0].node
        if self.has_session(job):
            session = {"port": JUPYTER_PORT, "url": session_path(job.project, job.name),
                       "simulated": False}  # fmt: skip
            others = [port for port in job.ports if port != JUPYTER_PORT]
            return [session, *self.urls(replace(job, ports=tuple(others)))]
        return [
            {
                "port": port,
                "url": f"http://{node}.sim.allot.local:{_node_port(job, port)}/",
                "simulated": True,
            }
            for port in job.ports
        ]

    def take_counts(self) -> AgentCounts:
        """None: the simulated cluster has no API whose calls could fail."""
        return AgentCounts()

    def open_shell(self, job: JobSpec) -> NoReturn:
        """Always NoShell: the simulated cluster has no containers to open a shell in."""
        raise NoShell(f"{job.project}/{job.name} runs on the simulated cluster: no containers")

    # -- derived state ----------------------------------------------------------------------------

    def phase(self, job: JobSpec, now: datetime) -> Phase:
        """ContainerCreating during the start delay, Running, then Succeeded after its duration;
        for a job its processes run, what they say."""
        if self.has_processes(job):
            found = self.processes.pods(*job.key)
            return found.phase if found is not None else "ContainerCreating"
        running_s = self._running_s(job, now)
        if running_s < 0:
            return "ContainerCreating"
        if job.sim_duration_s is not None and running_s >= job.sim_duration_s:
            return "Succeeded"
        return "Running"

    def status(self, job: JobSpec, now: datetime | None = None) -> JobStatus:
        """The job's phase, per-pod phases, progress and synthetic utilization at `now`. A job
        with a real Jupyter server is Running exactly when its server answers (the server's own
        start stands for the container's, so the simulated start delay is not added to it)."""
        now = now or self.clock()
        if self.has_processes(job):
            return self._process_status(job, now)
        phase = self.phase(job, now)
        message = ""
        if phase != "Succeeded" and self.has_session(job):
            if self.sessions.ready(*job.key):
                phase = "Running"
            else:
                message = self.sessions.failure(*job.key) or ""
                phase = "Failed" if message else "ContainerCreating"  # (not answering yet)
        pods = tuple(PodStatus(i, pod.node, phase) for i, pod in enumerate(job.placement))
        return JobStatus(
            project=job.project,
            name=job.name,
            phase=phase,
            pods=pods,
            progress=self._progress(job, now),
            utilization=self._job_utilization(job, now) if phase == "Running" else None,
            simulated=True,
            message=message,
            activity=self._activity(job, now) if phase == "Running" else None,
            started_at=job.started_at,
        )

    def _process_status(self, job: JobSpec, now: datetime) -> JobStatus:
        """The status of a job its processes run: their phases, their output as activity, no
        progress (their length is unknown) and synthetic utilization while they run."""
        found = self.processes.pods(*job.key)
        phase = found.phase if found is not None else "ContainerCreating"
        pod_phases = found.pod_phases if found is not None and found.pod_phases else ()
        pods = tuple(
            PodStatus(i, pod.node, pod_phases[i] if i < len(pod_phases) else phase)
            for i, pod in enumerate(job.placement)
        )
        running = phase == "Running"
        return JobStatus(
            project=job.project,
            name=job.name,
            phase=phase,
            pods=pods,
            utilization=self._job_utilization(job, now) if running else None,
            simulated=True,  # the GPU figures are synthetic
            message=found.message if found is not None else "",
            activity=self.processes.activity(*job.key) if running else None,
            started_at=job.started_at,
        )

    def _leftover(self, project: str, name: str) -> JobStatus:
        """A job whose processes this agent did not start: reported as they are, so that the
        portal's reconciliation stops it when no job holds it any more (its processes, user
        and files would stay otherwise) and takes its phase when one does."""
        found = self.processes.pods(project, name)
        return JobStatus(
            project=project,
            name=name,
            phase=found.phase if found is not None else "Failed",
            simulated=True,
            message=found.message if found is not None else "",
            started_at=self.processes.started_at(project, name),
        )

    def _activity(self, job: JobSpec, now: datetime) -> str:
        """The number of log lines written so far: it grows every LOG_EVERY_S of running time,
        until `ALLOT_SIM_HANG_AFTER_S` (in the job's environment) makes a simulated job hang."""
        running_s = self._running_s(job, now)
        hang = dict(job.environment).get("ALLOT_SIM_HANG_AFTER_S")
        if hang is not None and hang.replace(".", "", 1).isdigit():
            running_s = min(running_s, float(hang))
        return str(int(running_s // LOG_EVERY_S))

    def _running_s(self, job: JobSpec, now: datetime) -> float:
        """Seconds since the container started (negative while it is still being created)."""
        return (now - job.started_at).total_seconds() - self.start_delay_s

    def _progress(self, job: JobSpec, now: datetime) -> float | None:
        if not job.sim_duration_s:
            return None
        return min(1.0, max(0.0, self._running_s(job, now) / job.sim_duration_s))

    def _job_utilization(self, job: JobSpec, now: datetime) -> float | None:
        values = [
            device_utilization(job, device, now) for pod in job.placement for device in pod.devices
        ]
        return round(sum(values) / len(values), 3) if values else None

    def _nodes(self, specs: list[JobSpec], now: datetime) -> tuple[NodeStatus, ...]:
        """Nodes that hold running pods, with each busy device's utilization (shares add up)."""
        busy: dict[str, dict[int, float]] = {}
        for spec in specs:
            if self.phase(spec, now) != "Running":
                continue
            for pod in spec.placement:
                devices = busy.setdefault(pod.node, {})
                for device in pod.devices:
                    used = device_utilization(spec, device, now) * pod.share
                    devices[device] = round(min(1.0, devices.get(device, 0.0) + used), 3)
        return tuple(
            NodeStatus(name, ready=True, device_utilization=devices, simulated=True)
            for name, devices in sorted(busy.items())
        )


def device_utilization(job: JobSpec, device: int, now: datetime) -> float:
    """Synthetic utilization 0.55..0.97 of one device, steady for 10 s, seeded by job and device."""
    bucket = int(now.timestamp()) // UTILIZATION_BUCKET_S
    rng = random.Random(_seed(job.project, job.name, device, bucket))
    return round(0.55 + 0.42 * rng.random(), 3)


def _node_port(job: JobSpec, port: int) -> int:
    """A stable NodePort in Kubernetes' default range 30000-32767."""
    return 30000 + _seed(job.project, job.name, port) % 2768


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _log_lines(job: JobSpec, now: datetime, delay_s: float, tail: int) -> list[str]:
    """The banner plus one line per LOG_EVERY_S of running time (and a last line when finished);
    of those, the last `tail`. Only the lines kept are generated, so a long run costs O(tail)."""
    running_s = (now - job.started_at).total_seconds() - delay_s
    if running_s < 0 or tail == 0:
        return []
    finished = job.sim_duration_s is not None and running_s >= job.sim_duration_s
    if finished:
        running_s = job.sim_duration_s
    container_start = job.started_at + timedelta(seconds=delay_s)
    ticks = int(running_s // LOG_EVERY_S)
    write = _interactive_line if job.type == "interactive" else _training_line
    lines = _banner(job, container_start)
    lines += [
        write(job, container_start, tick) for tick in range(max(1, ticks - tail + 1), ticks + 1)
    ]
    if finished:
        lines.append(_final_line(job, container_start))
    return lines[-tail:]


def share_text(share: float) -> str:
    """A device share as every page spells GPUs (portal/core/formats.py, issue 34 item 11: two
    decimals rounded half up, no trailing zeros, 0.625 -> "0.63"; agents import nothing of the
    portal, tests/test_one_spelling_everywhere.py holds them equal)."""
    cents = Decimal(str(share)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return f"{cents:f}".rstrip("0").rstrip(".")


def _banner(job: JobSpec, start: datetime) -> list[str]:
    nodes = ", ".join(
        f"{pod.node} GPU {','.join(map(str, pod.devices)) or '-'}"
        + (f" ({share_text(pod.share)})" if pod.share < 1 else "")
        for pod in job.placement
    )
    image = job.image or "(default image)"
    lines = [f"{_stamp(start)} [simulated] pulled {image}", f"{_stamp(start)} started on {nodes}"]
    if job.type == "interactive":
        for port in job.ports:
            lines.append(f"{_stamp(start)} server listening on port {port}")
    return lines


def _training_line(job: JobSpec, start: datetime, tick: int) -> str:
    """Line `tick` (1-based) of a training run: epoch, step, loss falling with noise, ETA."""
    elapsed = tick * LOG_EVERY_S
    rng = random.Random(_seed(job.project, job.name))
    initial, floor, rate = (
        2.0 + rng.random(),
        0.05 + 0.2 * rng.random(),
        1 / (300 + 600 * rng.random()),
    )
    noise = random.Random(_seed(job.project, job.name, tick)).uniform(-0.03, 0.03)
    loss = floor + (initial - floor) * math.exp(-rate * elapsed) + noise
    epoch = int(elapsed // EPOCH_S) + 1
    steps_per_tick = 50 + _seed(job.name) % 100
    if job.sim_duration_s:
        epochs = f"/{max(1, math.ceil(job.sim_duration_s / EPOCH_S))}"
        eta = _duration(max(0.0, job.sim_duration_s - elapsed))
    else:
        epochs, eta = "", "until stopped"
    moment = _stamp(start + timedelta(seconds=elapsed))
    return (
        f"{moment} epoch {epoch}{epochs} step {tick * steps_per_tick} "
        f"loss {max(loss, 0.001):.4f} ETA {eta}"
    )


def _interactive_line(job: JobSpec, start: datetime, tick: int) -> str:
    moment = _stamp(start + timedelta(seconds=tick * LOG_EVERY_S))
    return f"{moment} kernel alive, {_duration(tick * LOG_EVERY_S)} since start"


def _final_line(job: JobSpec, start: datetime) -> str:
    moment = _stamp(start + timedelta(seconds=job.sim_duration_s or 0))
    return f"{moment} finished after {_duration(job.sim_duration_s or 0)} (Succeeded)"


def _duration(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"
