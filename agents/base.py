"""The agent interface: what the portal tells a cluster and what it hears back.

Plain data, and the protocols the drivers satisfy. The portal's cycle builds a :class:`JobSpec`
from a job row when the scheduler starts (or moves) a job, calls :meth:`Agent.start`, and on every
cycle reads an :class:`Observation` to move jobs from ContainerCreating to Running to Succeeded or
Failed. The database stays the source of truth: `start` is idempotent and a spec carries the time
the job was started, so an agent that lost its memory (a crash, another worker process) is rebuilt
by starting again every job the database says is placed. Besides jobs, an agent may run Jupyter
sessions (:class:`Sessions`) and open shells in its containers (:class:`Shell`); the portal asks
the agent for both rather than knowing which kind of agent it runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from agents.sessions import Session

JobKey = tuple[str, str]
"""(project, job name)."""

Phase = Literal["ContainerCreating", "Running", "Succeeded", "Failed"]
FINISHED: frozenset[str] = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True)
class PodSpec:
    """Where one pod of a job runs: a node, the device indexes it holds, its share of each."""

    node: str
    devices: tuple[int, ...] = ()
    share: float = 1.0


@dataclass(frozen=True)
class JobSpec:
    """A job as an agent needs it to run: identity, shape, placement and container settings.

    `started_at` is when the scheduler started the job (timezone-aware); phases, progress and
    logs are measured from it. `sim_duration_s` tells the simulated agent how long the job runs
    (None: until it is stopped); real agents ignore it. `cpu_millis` and `memory_bytes` are each
    pod's requests (0: none), `cpu_limit_millis` and `memory_limit_bytes` its limits (None: none),
    as Kubernetes' resources.requests and limits (issue 26).
    """

    project: str
    name: str
    placement: tuple[PodSpec, ...]
    started_at: datetime
    type: str = "train"
    gpus: float = 1.0
    pods: int = 1
    image: str = ""
    command: str = ""
    args: tuple[str, ...] = ()
    environment: tuple[tuple[str, str], ...] = ()
    ports: tuple[int, ...] = ()
    service_type: str = ""
    sim_duration_s: float | None = None
    user: str = ""
    volumes: tuple[tuple[str, str, bool], ...] = ()  # (PVC name, mount path, read-only)
    cpu_millis: int = 0
    memory_bytes: int = 0
    cpu_limit_millis: int | None = None
    memory_limit_bytes: int | None = None
    external: ExternalRef | None = None  # a workload another tool made (issue 33): bind its pods

    @property
    def key(self) -> JobKey:
        """(project, name)."""
        return (self.project, self.name)


@dataclass(frozen=True)
class ExternalRef:
    """A workload made by another tool whose pods ask for Allot (`spec.schedulerName: allot`,
    issue 33): a bare Pod, a batch/v1 Job, a JobSet, a Deployment's pod, a StatefulSet, ...

    `uid` names the group, placed all or nothing: its top owner's uid (found by following
    `ownerReferences`: Pod -> Job -> JobSet, Pod -> ReplicaSet -> Deployment, ...), or the pod's
    own uid when each pod stands alone (a bare Pod; a Deployment's or ReplicaSet's pods, which
    are placed one by one as KAI's pod-grouper does). `kind` and `owner` are that top owner's
    kind and name ("Pod" and the pod's name for a pod that stands alone)."""

    namespace: str
    kind: str
    owner: str
    uid: str


@dataclass(frozen=True)
class ExternalPod:
    """One pod of an external workload as the cluster shows it. `node` is "" while unbound."""

    name: str
    node: str = ""
    phase: str = "Pending"  # the pod's status.phase: Pending, Running, Succeeded, Failed


@dataclass(frozen=True)
class Workload:
    """An external workload's pods and what each asks for, read exactly as Kubernetes reads
    them (requests; GPUs from `nvidia.com/gpu`, or a fraction / GPU memory by annotation as KAI
    takes them). `size` is the gang: how many pods must be placed together (Job parallelism,
    JobSet replicas x parallelism, an annotation, else 1). `pods` are the pods that exist now,
    bound or not, in name order. `type` is "train" unless the pods' priority class says
    otherwise (KAI's `build` / `interactive`: never preempted). `complete` is True once the
    owner will make no more pods and every pod has ended (a Job Complete or Failed)."""

    ref: ExternalRef
    size: int
    pods: tuple[ExternalPod, ...]
    created_at: datetime
    gpus: float = 0.0
    gpu_memory_bytes: int | None = None
    cpu_millis: int = 0
    memory_bytes: int = 0
    cpu_limit_millis: int | None = None
    memory_limit_bytes: int | None = None
    type: str = "train"
    user: str = ""  # who made it, when the cluster says (an annotation); "" otherwise
    complete: bool = False
    # Its topology constraint by annotation (issue 38): a level's node label key, "" for none
    topology_required: str = ""
    topology_preferred: str = ""


@dataclass(frozen=True)
class PodStatus:
    """One pod as the cluster sees it."""

    index: int
    node: str
    phase: Phase


@dataclass(frozen=True)
class JobStatus:
    """A job as the cluster sees it: its phase (the slowest pod's), progress and utilization.

    `progress` is 0..1 when the job's length is known, else None. `utilization` is the mean GPU
    utilization of its devices, 0..1 (None before it runs). `simulated` marks synthetic figures.
    `started_at` names the run: a cycle that observed the cluster before the job was evicted and
    started again must not apply the old run's ending to the new one.
    """

    project: str
    name: str
    phase: Phase
    pods: tuple[PodStatus, ...] = ()
    progress: float | None = None
    utilization: float | None = None
    simulated: bool = False
    message: str = ""
    gpu_memory_used_bytes: int | None = None  # on its devices, as measured (None: not)
    activity: str | None = None  # changes whenever the job writes output or makes progress
    restarts: int = 0  # container restarts of its pods (crash loops, out of memory)
    started_at: datetime | None = None  # the run this describes (its spec's); None: unknown

    @property
    def key(self) -> JobKey:
        """(project, name)."""
        return (self.project, self.name)


@dataclass(frozen=True)
class NodeStatus:
    """A node as the cluster sees it: readiness and per-device utilization (0..1).

    From an inventory (issue 26): `cpu_millis` and `memory_bytes` allocatable to pods (None: not
    reported), and `failed_devices`, the GPU indexes out of service (None: not reported, which
    leaves what is recorded as it is; () : none failed)."""

    name: str
    ready: bool = True
    device_utilization: dict[int, float] = field(default_factory=dict)
    device_memory_used_bytes: dict[int, int] = field(default_factory=dict)  # measured only
    simulated: bool = False
    gpus: int | None = None  # what the cluster says the node has (None: not reported)
    gpu_product: str = ""
    gpu_memory_bytes: int | None = None
    pool: str = ""
    schedulable: bool = True
    cpu_millis: int | None = None
    memory_bytes: int | None = None
    failed_devices: tuple[int, ...] | None = None
    # What live pods Allot did not place hold on this node (other schedulers, DaemonSets, static
    # pods), as KAI counts every bound pod (issue 33): their requests, summed.
    outside_gpus: int = 0
    outside_cpu_millis: int = 0
    outside_memory_bytes: int = 0
    # The node's labels (issue 38): its pool's topology levels name those that group nodes
    # into racks and blocks (R23.1). None: not reported, which leaves what is recorded.
    labels: tuple[tuple[str, str], ...] | None = None


@dataclass(frozen=True)
class Observation:
    """What one look at the cluster saw, at time `at`: every job the agent runs, and nodes.

    `problem` says why the agent could not look (the API server is unreachable): the jobs are
    then as last seen and `nodes` is empty, which means "unknown", not "gone".

    `workloads` are the external workloads (issue 33) in every namespace, bound or not; once
    Allot has bound a workload's pods they are labelled with the job's project and name and
    also reported in `jobs` like Allot's own.

    `synced` is False when the view may be partial (the agent has not listed the cluster since
    it started, or its watch is failing, or it is backing off): the portal then decides
    nothing on it, since pods it does not see may still hold GPUs (issue 40). The simulated
    agent is always synced.
    """

    at: datetime
    jobs: dict[JobKey, JobStatus]
    nodes: tuple[NodeStatus, ...] = ()
    simulated: bool = False
    problem: str = ""
    synced: bool = True
    workloads: tuple[Workload, ...] = ()


@dataclass(frozen=True)
class AgentCounts:
    """What the agent's calls to its cluster cost since it was last asked (`take_counts`).

    `api_errors`: calls that failed, by (verb, resource, code), code being the HTTP status or
    "none" when no answer came; `backoffs`: waits begun, by scope ("agent": all calls wait,
    "job": one job's, "watch": the pod watch's); `backoff_s`: the seconds of those waits."""

    api_errors: dict[tuple[str, str, str], int] = field(default_factory=dict)
    backoffs: dict[str, int] = field(default_factory=dict)
    backoff_s: dict[str, float] = field(default_factory=dict)


class NoShell(RuntimeError):
    """The agent has no containers to open a shell in (its `supports_shell` is False)."""


class Sessions(Protocol):
    """An agent's Jupyter sessions: one notebook server per interactive job on port 8888, which
    the portal's `/sessions/{project}/{name}/` proxy reaches with the session's token.

    The agent starts and stops a session with its job. The portal only finds sessions (`get`)
    and, every cycle, stops those no job holds any more (`all`, `stop`): servers left by a
    process that died. Safe to call from several threads and processes."""

    def get(self, project: str, name: str) -> Session | None:
        """Where the job's server answers (host, port, token, base URL), or None when it has
        none. The address may not answer yet: the proxy waits for it."""
        ...

    def all(self) -> list[Session]:
        """Every live server, those started by other processes included."""
        ...

    def stop(self, project: str, name: str) -> bool:
        """Stop the job's server; False when there was none."""
        ...

    def workspace_projects(self, user: str) -> list[str]:
        """The projects in which `user` has a persistent workspace (the home of every session
        of theirs there, kept between sessions: a folder, or a PersistentVolumeClaim)."""
        ...

    def delete_workspace(self, project: str, user: str) -> bool:
        """Delete `user`'s workspace in `project` and its files; False when there was none.
        Raises `agents.sessions.WorkspaceBusy` while a session of theirs uses it."""
        ...


class Shell(Protocol):
    """An interactive terminal in a job's container (`allot bash`): one reader thread; writes,
    resizes and close may come from any thread."""

    @property
    def open(self) -> bool:
        """True until the shell has ended or was closed."""
        ...

    def read(self, timeout_s: float = 0.2) -> bytes:
        """What the terminal printed since the last read (waits up to `timeout_s` for it)."""
        ...

    def write(self, data: bytes) -> None:
        """Keystrokes for the shell."""
        ...

    def resize(self, columns: int, rows: int) -> None:
        """The user's terminal changed size."""
        ...

    @property
    def exit_code(self) -> int | None:
        """The shell's exit code once it ended (None while it runs or when unknown)."""
        ...

    def close(self) -> None:
        """End the shell."""
        ...


class Agent(Protocol):
    """A cluster driver. Every method is idempotent and safe to call from several threads.

    What the portal may ask besides: `simulated`, True when no real cluster is behind it (its
    figures are synthetic); `sessions`, where its Jupyter sessions answer, None when it runs none
    (the session proxy asks this object, the one the cycle starts sessions through); and
    `supports_shell`, True when `open_shell` opens terminals in its jobs' containers. The agent
    is built from the settings in one place (`portal.scheduling.agent`); nothing else in the
    portal asks which kind it is.
    """

    simulated: bool
    sessions: Sessions | None
    supports_shell: bool

    def observe(self) -> Observation:
        """Every job this agent runs (finished ones included until stopped) and the nodes."""
        ...

    def start(self, job: JobSpec) -> None:
        """Run `job` on its placement; starting a running job with a new placement moves it.

        A job with `external` set is a workload another tool made (issue 33): its pods exist, and
        starting it binds its unbound pods to the placement (all or none) and labels them
        `allot.io/project` / `allot.io/job` with the job's key, which `observe`, `stop`, `logs`
        and `status` then find them by. Stopping it deletes (evicts) those pods; their owner
        makes new ones, which wait for Allot again."""
        ...

    def status(self, job: JobSpec) -> JobStatus:
        """One job's status now, without observing the whole cluster."""
        ...

    def stop(self, project: str, name: str) -> None:
        """Stop and forget the job; stopping an unknown job does nothing."""
        ...

    def carry_out(self, stops: Iterable[JobKey], starts: Iterable[JobSpec]) -> None:
        """`stop` each of `stops`, then `start` each of `starts`: a cycle's work in one call, so
        an agent may carry independent jobs out concurrently."""
        ...

    def explain(self, waiting: Mapping[str, str]) -> None:
        """Tell the cluster why external workloads wait: `waiting` maps a workload's
        `ExternalRef.uid` to the reason the portal shows (not placed yet, or its namespace maps
        to no project). Each unbound pod of it gets a Kubernetes Event and a PodScheduled=False
        condition with that text when it changes, as kube-scheduler does, so `kubectl describe
        pod` says what the portal says. An agent whose cluster has no external workloads (the
        simulated one) has nothing to tell."""
        ...

    def logs(self, job: JobSpec, tail: int = 200) -> list[str]:
        """The last `tail` lines of the job's output (empty before it runs)."""
        ...

    def urls(self, job: JobSpec) -> list[dict]:
        """Where the job's ports answer: ``[{"port", "url", ...}]`` (empty without ports)."""
        ...

    def take_counts(self) -> AgentCounts:
        """The failed calls and back-offs since the last call (then counted from zero again),
        for the portal's metrics; an agent that calls no API (the simulated one) has none."""
        ...

    def open_shell(self, job: JobSpec) -> Shell:
        """A terminal in the job's first pod. Raises NoShell when `supports_shell` is False, and
        the cluster's error when it refuses or cannot be reached."""
        ...
