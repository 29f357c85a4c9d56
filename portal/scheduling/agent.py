"""The portal's side of the agent interface: which agent runs, and ORM rows turned into specs.

The agent is one object per process. For the simulated agent that is enough: its answers are
functions of the job spec and the clock, and the cycle rebuilds its memory from the database
(see `observe.reconcile`), so the web process and every Celery worker agree.

This factory is the only reader of `ALLOT_AGENT`: the rest of the portal asks the agent what it
can do (`simulated`, `sessions`, `supports_shell`; `agents.base.Agent`), never which kind it is.
"""

from __future__ import annotations

import shlex
import threading

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from agents.base import Agent, ExternalRef, JobSpec, PodSpec
from agents.demo_durations import demo_duration_s
from agents.processes import LocalProcesses
from agents.sessions import LocalSessions, session_path
from agents.simulated import SimulatedAgent
from portal.core import clock, trigger
from portal.core.origins import session_key
from portal.jobs import placement

_agent: Agent | None = None
_agent_lock = threading.Lock()


def get_agent() -> Agent:
    """The process-wide agent chosen by `ALLOT_AGENT` (its sessions are this process's too: the
    cycle starts them through it and the session proxy finds them in it)."""
    global _agent
    with _agent_lock:
        if _agent is None:
            _agent = _build_agent(settings.ALLOT_AGENT)
        return _agent


def built_agent() -> Agent | None:
    """This process's agent if something built it, else None (without building one)."""
    return _agent


def _build_agent(kind: str) -> Agent:
    if kind == "simulated":
        guarded = settings.ALLOT_SESSIONS_GUARDED_URLS if settings.ALLOT_SESSIONS_FIREWALL else None
        isolation = {
            "python": settings.ALLOT_SESSIONS_PYTHON,
            "single_user": settings.ALLOT_SESSIONS_SINGLE_USER,
            "private": settings.ALLOT_SESSIONS_PRIVATE_PATHS,
            "guarded": guarded,
        }
        sessions = (
            LocalSessions(
                settings.ALLOT_SESSIONS_DIR,
                workspaces=settings.ALLOT_WORKSPACES_DIR,
                portal_url=settings.ALLOT_PORTAL_URL,
                **isolation,
            )
            if settings.ALLOT_SIM_JUPYTER
            else None
        )
        processes = (
            LocalProcesses(settings.ALLOT_PROCESSES_DIR, **isolation)
            if settings.ALLOT_SIM_PROCESSES
            else None
        )
        # its pods start and run on the portal's clock: the replay clock when it is on
        return SimulatedAgent(start_delay_s=settings.ALLOT_SIM_START_DELAY_S, sessions=sessions,
                              on_session_ready=trigger.request_cycle, clock=clock.now,
                              processes=processes)  # fmt: skip
    if kind == "kubernetes":
        return _kubernetes_agent()
    raise ImproperlyConfigured(f"ALLOT_AGENT={kind!r}: choose simulated or kubernetes")


def kubernetes_config():
    """The Kubernetes agent's settings (ALLOT_K8S_*, ALLOT_DCGM_URL) as its plain config."""
    from agents.kubernetes.inventory import KubernetesConfig

    return KubernetesConfig(
        host=settings.ALLOT_K8S_HOST,
        context=settings.ALLOT_K8S_CONTEXT,
        token=settings.ALLOT_K8S_TOKEN,
        token_file=settings.ALLOT_K8S_TOKEN_FILE,
        ca_file=settings.ALLOT_K8S_CA_FILE,
        client_cert_file=settings.ALLOT_K8S_CLIENT_CERT_FILE,
        client_key_file=settings.ALLOT_K8S_CLIENT_KEY_FILE,
        verify_ssl=settings.ALLOT_K8S_VERIFY_SSL,
        pool_label=settings.ALLOT_K8S_POOL_LABEL,
        grace_period_s=settings.ALLOT_K8S_GRACE_PERIOD_S,
        image_pull_policy=settings.ALLOT_K8S_IMAGE_PULL_POLICY,
        ingress_host=settings.ALLOT_K8S_INGRESS_HOST,
        ingress_class=settings.ALLOT_K8S_INGRESS_CLASS,
        nodeport_host=settings.ALLOT_K8S_NODEPORT_HOST,
        orphan_grace_s=settings.ALLOT_K8S_ORPHAN_GRACE_S,
        concurrency=settings.ALLOT_K8S_CONCURRENCY,
        dcgm_url=settings.ALLOT_DCGM_URL,
        session_secret=session_secret(),
        workspace_size=settings.ALLOT_K8S_WORKSPACE_SIZE,
        workspace_storage_class=settings.ALLOT_K8S_WORKSPACE_STORAGE_CLASS,
    )


def session_secret() -> str:
    """The key Jupyter session tokens are derived from (never the SECRET_KEY itself)."""
    from django.utils.crypto import salted_hmac

    return salted_hmac("allot.sessions", "jupyter-token").hexdigest()


def _kubernetes_agent() -> Agent:
    from kubernetes.config import ConfigException

    from agents.kubernetes.agent import KubernetesAgent

    try:
        return KubernetesAgent(kubernetes_config())
    except ConfigException as exc:
        raise ImproperlyConfigured(
            f"ALLOT_AGENT=kubernetes: no cluster to talk to ({exc}); set ALLOT_K8S_HOST, "
            "KUBECONFIG, or run inside the cluster with a service account"
        ) from exc


def placement_specs(stored: list[dict]) -> tuple[PodSpec, ...]:
    """`Job.placement` JSON as the agent's pod specs."""
    return tuple(PodSpec(*pod) for pod in placement.decode(stored))


SPEC_FIELDS = (
    "id", "project__name", "name", "type", "gpus", "pods", "image", "command", "args",
    "environment", "ports", "service_type", "sim_duration_s", "placement", "started_at",
    "volumes", "user__username", "cpu_millis", "memory_bytes", "cpu_limit_millis",
    "memory_limit_bytes", "external_uid", "external_kind", "external_owner", "external_namespace",
)  # fmt: skip


def spec_from_values(row: dict) -> JobSpec:
    """A JobSpec from a `Job.objects.values(*SPEC_FIELDS)` row (or an equivalent dict)."""
    return JobSpec(
        project=row["project__name"],
        name=row["name"],
        placement=placement_specs(row["placement"]),
        started_at=row["started_at"],
        type=row["type"],
        gpus=float(row["gpus"]),
        pods=row["pods"],
        image=row["image"],
        command=shlex.join(row["command"] or ()),  # words with spaces stay whole
        args=tuple(str(arg) for arg in row["args"] or ()),
        environment=tuple(sorted((str(k), str(v)) for k, v in (row["environment"] or {}).items())),
        ports=tuple(int(port) for port in row["ports"] or ()),
        service_type=row["service_type"],
        sim_duration_s=_sim_duration(row),
        user=row.get("user__username") or "",
        volumes=tuple(
            (v["pvc"], v["mount_path"], bool(v.get("read_only"))) for v in row.get("volumes") or ()
        ),
        cpu_millis=row.get("cpu_millis") or 0,
        memory_bytes=row.get("memory_bytes") or 0,
        cpu_limit_millis=row.get("cpu_limit_millis"),
        memory_limit_bytes=row.get("memory_limit_bytes"),
        external=_external(row),
    )


def _external(row: dict) -> ExternalRef | None:
    """Where a workload another tool made lives (issue 33); None for Allot's own jobs."""
    if not row.get("external_uid"):
        return None
    return ExternalRef(row["external_namespace"], row["external_kind"], row["external_owner"],
                       row["external_uid"])  # fmt: skip


def _sim_duration(row: dict) -> float | None:
    """How long the simulated cluster runs the job: its `sim_duration_s`, else in the demo
    (ALLOT_SIM_DEMO) a training job's Philly-drawn run time (agents/demo_durations.py), else
    until it is stopped (None)."""
    if row["sim_duration_s"] is not None:
        return row["sim_duration_s"]
    if settings.ALLOT_SIM_DEMO and row["type"] == "train" and row.get("id") is not None:
        return demo_duration_s(row["id"], settings.ALLOT_SIM_DEMO_SCALE)
    return None


def job_spec(job) -> JobSpec:
    """A JobSpec from a Job row (ORM object)."""
    row = {name: getattr(job, name) for name in SPEC_FIELDS if "__" not in name}
    row["project__name"] = job.project.name
    row["user__username"] = job.user.get_username() if job.user else ""
    return spec_from_values(row)


def _placed(job) -> bool:
    return bool(job.placement) and job.started_at is not None


def job_logs(job, tail: int = 200) -> list[str]:
    """The job's last `tail` log lines from the agent; none while it is not placed."""
    return get_agent().logs(job_spec(job), tail) if _placed(job) else []


def job_urls(job) -> list[dict]:
    """Where the job's ports answer (`[{"port", "url", "simulated"}]`); none while not placed.
    A session the portal proxies is given by its whole address (`session_address`)."""
    if not _placed(job):
        return []
    root = session_path(job.project.name, job.name)
    return [{**url, "url": session_address(job, url["url"].removeprefix(root))}
            if url.get("url", "").startswith(root) else url
            for url in get_agent().urls(job_spec(job))]  # fmt: skip


def session_address(job, path: str = "") -> str:
    """Where a person opens `path` (relative to the session's root) of the job's notebook: on
    its own origin (ALLOT_SESSIONS_ORIGIN, issue 32), else on the portal's address
    (ALLOT_PORTAL_URL; the path alone when that is not set either)."""
    root = session_path(job.project.name, job.name)
    origin = settings.ALLOT_SESSIONS_ORIGIN
    if origin is None:
        return f"{settings.ALLOT_PORTAL_URL}{root}{path}"
    return origin.origin_for(session_key(job.pk, job.project.name, job.name)) + root + path
