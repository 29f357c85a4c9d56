"""Allot's only settings module: every value comes from the environment.

Each variable is read once, by a small typed helper that fails loudly on a bad value, and is
listed with its default in `.env.example`. Secrets may also come from a file named by
`NAME_FILE` (Docker secrets). With nothing set, the portal runs in the embedded default: SQLite
in `var/`, an in-memory channel layer, no Redis, and the scheduling cycle inside the web process.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import re
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from csp.constants import NONCE, NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from portal.core.origins import OriginError
from portal.core.origins import parse as parse_origin
from portal.core.validators import MIN_RUNTIME_MAX_S
from scheduler.bands import check_bands
from scheduler.minruntime import parse_duration, parse_min_runtime
from scheduler.quantity import cpu_millis, memory_bytes

BASE_DIR = Path(__file__).resolve().parent.parent
PLOTLY_JS_DIR = Path(importlib.util.find_spec("plotly").origin).parent / "package_data"
VAR_DIR = BASE_DIR / "var"

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def envstr(name: str, default: str | None = None) -> str | None:
    """The variable as text, or `default` when it is unset."""
    return os.environ.get(name, default)


def envbool(name: str, default: bool) -> bool:
    """The variable as a boolean (1/0, true/false, yes/no, on/off); anything else is an error."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1 or 0)")


def envint(name: str, default: int, minimum: int = 0) -> int:
    """The variable as an integer of at least `minimum`."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below its minimum {minimum}")
    return value


def envfloat(name: str, default: float, minimum: float = 0.0) -> float:
    """The variable as a finite number of at least `minimum`."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None
    if not value >= minimum or value == float("inf"):
        raise ImproperlyConfigured(f"{name}={raw} must be a finite number >= {minimum}")
    return value


def envlist(name: str, default: str) -> list[str]:
    """The variable as a comma-separated list, blanks dropped."""
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def envnetworks(name: str) -> list[str]:
    """The variable as comma-separated networks in CIDR notation ("10.20.0.0/16,fd00::/8"), each
    checked (a bare address is its own /32 or /128); unset or empty: none."""
    networks = []
    for item in envlist(name, ""):
        try:
            networks.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError:
            raise ImproperlyConfigured(
                f"{name}: {item!r} is not a network such as 10.0.0.0/8"
            ) from None
    return networks


def envbands(name: str, default: str = "") -> tuple[float, ...]:
    """The variable as ascending positive GPU-hour thresholds, e.g. "1,10"; `default` when the
    variable is unset; "off", "none" or an empty value: no bands."""
    raw = os.environ.get(name)
    if raw is None:
        raw = default
    if raw.strip().lower() in ("", "off", "none"):
        return ()
    try:
        values = tuple(float(item) for item in raw.split(",") if item.strip())
    except ValueError:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a comma-separated list of numbers"
        ) from None
    try:
        check_bands(values)
    except ValueError:
        raise ImproperlyConfigured(
            f"{name}={raw!r} must be positive GPU-hours in ascending order, e.g. 1,10"
        ) from None
    return values


def envminruntime(name: str) -> float:
    """The variable as a minimum run time before eviction (R7.4) in seconds: a duration such as
    "90s", "30m", "2h", "1d" or plain seconds, "0" (no protection, the default when unset or
    empty) or "never" / "-1" (never evicted that way); at most a year."""
    raw = os.environ.get(name, "")
    if not raw.strip():
        return 0.0
    try:
        seconds = parse_min_runtime(raw)
    except ValueError:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a duration: use e.g. 90s, 30m, 2h or 1d (or plain "
            "seconds), 0 for no protection, or never (-1)"
        ) from None
    if seconds > MIN_RUNTIME_MAX_S:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is longer than a year ({MIN_RUNTIME_MAX_S} s); use never (-1) to "
            "protect jobs for ever"
        )
    return seconds


def envchoice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """The variable, which must be one of `choices`."""
    value = os.environ.get(name, default)
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} must be one of {', '.join(choices)}")
    return value


SECRET_FILES: list[Path] = []  # every NAME_FILE read: no Jupyter session may read them


def envsecret(name: str) -> str | None:
    """A secret from `NAME`, or from the file named by `NAME_FILE` (trailing newline dropped)."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        SECRET_FILES.append(Path(path))
        try:
            return Path(path).read_text().rstrip("\n")
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={path!r} cannot be read: {exc}") from None
    return os.environ.get(name)


def envfile(name: str, secret: bool = False) -> str:
    """The path of a file the variable names, which must be readable ("" when unset); a secret
    file is one no Jupyter session may read."""
    path = os.environ.get(name, "")
    if not path:
        return ""
    if not os.access(path, os.R_OK):
        raise ImproperlyConfigured(f"{name}={path!r} is not a readable file")
    if secret:
        SECRET_FILES.append(Path(path))
    return path


# --- Core ---------------------------------------------------------------------------------------

DEBUG = envbool("DEBUG", True)
SECRET_KEY = envsecret("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY (or SECRET_KEY_FILE) must be set when DEBUG=0")
    # Development only: a fixed, obviously insecure key so sessions survive restarts.
    SECRET_KEY = "django-insecure-allot-development-key-do-not-use-in-production"

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "127.0.0.1,localhost")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "")

# Notebooks on an origin of their own (issue 32 item 1; portal/core/origins.py says why and how):
# ALLOT_SESSIONS_ORIGIN, e.g. https://*.nb.example.org (an origin per session: a wildcard DNS
# name and certificate) or https://nb.example.org (one origin for all sessions), and
# ALLOT_PORTAL_URL, where the sessions' origin sends a person to sign in (the portal's own
# address, e.g. https://allot.example.org). Empty: notebooks are served on the portal's origin
# under `Content-Security-Policy: sandbox`, which keeps the portal safe and JupyterLab from
# working - set both. `make run` serves them on http://*.localhost:PORT.
try:
    ALLOT_SESSIONS_ORIGIN = parse_origin(envstr("ALLOT_SESSIONS_ORIGIN", "") or "")
except OriginError as exc:
    raise ImproperlyConfigured(f"ALLOT_SESSIONS_ORIGIN: {exc}") from None
ALLOT_PORTAL_URL = (envstr("ALLOT_PORTAL_URL", "") or "").strip().rstrip("/")
if ALLOT_SESSIONS_ORIGIN is not None:
    _portal = urlsplit(ALLOT_PORTAL_URL)
    if _portal.scheme not in ("http", "https") or not _portal.netloc:
        raise ImproperlyConfigured(
            "ALLOT_PORTAL_URL must be the portal's address (e.g. https://allot.example.org) when "
            f"ALLOT_SESSIONS_ORIGIN is set: it is {ALLOT_PORTAL_URL!r}"
        )
    if ALLOT_SESSIONS_ORIGIN.key_of(_portal.netloc) is not None:
        raise ImproperlyConfigured(
            f"ALLOT_SESSIONS_ORIGIN must be an origin apart from the portal's: {ALLOT_PORTAL_URL} "
            "is one of its hosts"
        )
    ALLOWED_HOSTS.append(ALLOT_SESSIONS_ORIGIN.allowed_host)
# How long a sign-in to one notebook lasts before the browser is sent through the portal again
# (unnoticed while the portal's sign-in lasts), and how often an open kernel or terminal socket
# checks that its user may still use it (item 4).
ALLOT_SESSIONS_CREDENTIAL_AGE_S = envint("ALLOT_SESSIONS_CREDENTIAL_AGE_S", 12 * 3600, minimum=60)
ALLOT_SESSIONS_RECHECK_S = envfloat("ALLOT_SESSIONS_RECHECK_S", 2.0, minimum=0.1)
# A cluster or project admin's "Access server" on another's notebook lasts this long (item 3).
ALLOT_SESSIONS_ADMIN_ACCESS_S = envint("ALLOT_SESSIONS_ADMIN_ACCESS_S", 3600, minimum=60)

INSTALLED_APPS = [
    "daphne",  # first, so `runserver` serves the ASGI application (websockets)
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "axes",  # failed sign-ins and lockouts (issue 22 item 3)
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "portal.audit",
    "portal.tenancy",
    "portal.cluster",
    "portal.jobs",
    "portal.budgets",
    "portal.reservations",
    "portal.scheduling",
    "portal.web",
    "portal.notify",
]

MIDDLEWARE = [
    "portal.web.metrics.request_latency",  # first: times the whole answer, by route
    "django.middleware.security.SecurityMiddleware",
    "portal.web.session_origin.sessions_host_gate",  # the sessions' origin serves sessions only
    "csp.middleware.CSPMiddleware",  # Content-Security-Policy: see CONTENT_SECURITY_POLICY
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "portal.audit.context.AuditContextMiddleware",  # who and from where, for the audit log
    "django.contrib.messages.middleware.MessageMiddleware",
    "portal.web.sso.LocalLoginGate",  # ALLOT_LOCAL_LOGIN=0: no password is taken anywhere
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a lockout into portal.web.lockout's answer
]

ROOT_URLCONF = "portal.urls"
# Prometheus metrics at /metrics answer only `Authorization: Bearer <ALLOT_METRICS_TOKEN>`;
# unset (the default) /metrics is a 404: nothing is exported publicly.
ALLOT_METRICS_TOKEN = envsecret("ALLOT_METRICS_TOKEN") or None
CSRF_FAILURE_VIEW = "portal.web.errors.csrf_failure"  # in the portal's layout
WSGI_APPLICATION = "portal.wsgi.application"
ASGI_APPLICATION = "portal.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -----------------------------------------------------------------------------------

DEFAULT_DATABASE_URL = f"sqlite:///{VAR_DIR / 'allot.sqlite3'}"
DATABASE_URL = envstr("DATABASE_URL", DEFAULT_DATABASE_URL)


def _database(url: str) -> dict:
    """Django's DATABASES entry for `url`; SQLite gets WAL and up-front write locks."""
    try:
        config = dj_database_url.parse(url, conn_max_age=envint("DB_CONN_MAX_AGE", 0))
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL={url!r}: {exc}") from None
    if config["ENGINE"] == "django.db.backends.postgresql" and envbool("DB_POOL", True):
        # A pool per process (psycopg_pool): under ASGI every request runs in a thread of its
        # own, so without one each request would open and close a connection of its own.
        config["CONN_MAX_AGE"] = 0  # Django refuses persistent connections beside a pool
        size = envint("DB_POOL_MAX", 8, minimum=1)
        config["OPTIONS"] = {"pool": {"min_size": 1, "max_size": size, "timeout": 30}}
    if config["ENGINE"] == "django.db.backends.sqlite3":
        Path(config["NAME"]).parent.mkdir(parents=True, exist_ok=True)
        # The embedded cycle thread and the request threads write concurrently: IMMEDIATE takes
        # the write lock at BEGIN (no upgrade deadlocks) and WAL lets readers go on meanwhile.
        config["OPTIONS"] = {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    return config


DATABASES = {"default": _database(DATABASE_URL)}
# Threads per web process answering HTTP (portal.asgi: Django's WSGI handler behind the ASGI
# server); a thread holds at most one of the process's pooled database connections (DB_POOL_MAX).
WEB_THREADS = envint("WEB_THREADS", 8, minimum=1)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis, Celery, Channels --------------------------------------------------------------------

REDIS_URL = envstr("REDIS_URL") or None
EMBEDDED = REDIS_URL is None  # no broker: the cycle runs inside the web process

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
    # Django's Redis cache, its client kept per process rather than per request (portal.core.cache)
    CACHES = {"default": {"BACKEND": "portal.core.cache.RedisCache", "LOCATION": REDIS_URL}}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    # Process memory; LocMemCache culls a third of its entries at MAX_ENTRIES (300 by default),
    # fewer than the metrics' running totals of a few dozen projects (portal.scheduling.
    # cycle_metrics): culled counters would fall back to zero. Its entries are small.
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "OPTIONS": {"MAX_ENTRIES": 100_000},
        }
    }

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = EMBEDDED
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = "UTC"
CELERY_TASK_ROUTES = {"portal.notify.tasks.*": {"queue": "notify"}}

# Email: the console in the embedded default; SMTP when EMAIL_HOST is set
EMAIL_HOST = envstr("EMAIL_HOST", "")
EMAIL_BACKEND = envstr(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend",
)
EMAIL_PORT = envint("EMAIL_PORT", 587)
EMAIL_HOST_USER = envstr("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = envsecret("EMAIL_HOST_PASSWORD") or ""
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", True)
DEFAULT_FROM_EMAIL = envstr("DEFAULT_FROM_EMAIL", "allot@localhost")

# --- Allot --------------------------------------------------------------------------------------

ALLOT_AGENT = envchoice("ALLOT_AGENT", "simulated", ("simulated", "kubernetes"))
ALLOT_CYCLE_INTERVAL_S = envfloat("ALLOT_CYCLE_INTERVAL_S", 2.0, minimum=0.1)
ALLOT_SIM_START_DELAY_S = envfloat("ALLOT_SIM_START_DELAY_S", 3.0)
# A settable clock for scratch portals (portal.core.clock): the cycle, budgets, runs and
# reservations read the time a cluster admin sets at /api/v1/scheduler/clock/, so scenarios that
# move their clock by hours replay through REST. Refused without DEBUG (a system check).
ALLOT_REPLAY_CLOCK = envbool("ALLOT_REPLAY_CLOCK", False)
# The demo (issue 34 item 14; `make run` sets it): simulated training jobs given no
# sim_duration_s finish after a run time drawn from the Philly trace times ALLOT_SIM_DEMO_SCALE
# (1/60: an hour of the trace is a minute here), so a new install soon has Succeeded jobs,
# history and run-time predictions. Off: they run until stopped.
ALLOT_SIM_DEMO = envbool("ALLOT_SIM_DEMO", False)
ALLOT_SIM_DEMO_SCALE = envfloat("ALLOT_SIM_DEMO_SCALE", 1 / 60, minimum=1e-6)
# The Kubernetes agent (ALLOT_AGENT=kubernetes): no host means the in-cluster service account,
# else KUBECONFIG and its context. See docs/kubernetes.md.
ALLOT_K8S_HOST = envstr("ALLOT_K8S_HOST", "") or None
ALLOT_K8S_CONTEXT = envstr("ALLOT_K8S_CONTEXT", "") or None
ALLOT_K8S_VERIFY_SSL = envbool("ALLOT_K8S_VERIFY_SSL", True)
ALLOT_K8S_POOL_LABEL = envstr("ALLOT_K8S_POOL_LABEL", "allot.io/pool")
ALLOT_K8S_GRACE_PERIOD_S = envint("ALLOT_K8S_GRACE_PERIOD_S", 30)
ALLOT_K8S_IMAGE_PULL_POLICY = envchoice(
    "ALLOT_K8S_IMAGE_PULL_POLICY", "IfNotPresent", ("IfNotPresent", "Always", "Never")
)
ALLOT_K8S_INGRESS_HOST = envstr("ALLOT_K8S_INGRESS_HOST", "")
ALLOT_K8S_INGRESS_CLASS = envstr("ALLOT_K8S_INGRESS_CLASS", "") or None
# Who Allot is to ALLOT_K8S_HOST: a bearer token (or ALLOT_K8S_TOKEN_FILE, read again whenever it
# changes, as a projected service-account token is rotated) or a client certificate and key; and
# the CA that signed the API server's certificate.
ALLOT_K8S_TOKEN = envsecret("ALLOT_K8S_TOKEN") or ""
ALLOT_K8S_TOKEN_FILE = envfile("ALLOT_K8S_TOKEN_FILE")  # envsecret above keeps it from sessions
ALLOT_K8S_CA_FILE = envfile("ALLOT_K8S_CA_FILE")
ALLOT_K8S_CLIENT_CERT_FILE = envfile("ALLOT_K8S_CLIENT_CERT_FILE")
ALLOT_K8S_CLIENT_KEY_FILE = envfile("ALLOT_K8S_CLIENT_KEY_FILE", secret=True)
if bool(ALLOT_K8S_CLIENT_CERT_FILE) != bool(ALLOT_K8S_CLIENT_KEY_FILE):
    raise ImproperlyConfigured(
        "ALLOT_K8S_CLIENT_CERT_FILE and ALLOT_K8S_CLIENT_KEY_FILE go together"
    )
# The host of NodePort jobs' URLs ("": the address of the node the job's first pod runs on).
ALLOT_K8S_NODEPORT_HOST = envstr("ALLOT_K8S_NODEPORT_HOST", "")
# A Service or Ingress with Allot's labels that no job claims this long is deleted.
ALLOT_K8S_ORPHAN_GRACE_S = envfloat("ALLOT_K8S_ORPHAN_GRACE_S", 60.0)
# How many jobs the agent starts or stops at once, each on a pooled connection (1: one by one).
ALLOT_K8S_CONCURRENCY = envint("ALLOT_K8S_CONCURRENCY", 16, minimum=1)
ALLOT_DCGM_URL = envstr("ALLOT_DCGM_URL", "")
# Under the simulated agent, interactive jobs on port 8888 get a real local JupyterLab
ALLOT_SIM_JUPYTER = envbool("ALLOT_SIM_JUPYTER", True)
ALLOT_SESSIONS_DIR = Path(envstr("ALLOT_SESSIONS_DIR", str(VAR_DIR / "sessions")))
# Under the simulated agent, a job with a command (not a Jupyter session) runs its pods as real,
# isolated local processes as sessions are (issue 33; `make run` turns it on). Off, such jobs are
# simulated for their sim_duration_s, as the benchmarks and most tests rely on.
ALLOT_SIM_PROCESSES = envbool("ALLOT_SIM_PROCESSES", False)
# beside the sessions by default: where the operator made a place the jobs' users can reach
ALLOT_PROCESSES_DIR = Path(
    envstr("ALLOT_PROCESSES_DIR", "") or ALLOT_SESSIONS_DIR.parent / "processes"
)
# A local session runs a researcher's code on this machine (docs/security.md). A portal run as
# root starts each as a system user of its own; one that is not root refuses to, unless this is
# one person's embedded trial: `make run` sets ALLOT_SESSIONS_SINGLE_USER=1, and the notebook
# then runs as the portal's own user, its only researcher. Never with REDIS_URL (many users).
ALLOT_SESSIONS_SINGLE_USER = envbool("ALLOT_SESSIONS_SINGLE_USER", False)
if ALLOT_SESSIONS_SINGLE_USER and not EMBEDDED:
    raise ImproperlyConfigured(
        "ALLOT_SESSIONS_SINGLE_USER=1 is for the embedded single-user `make run` only: with "
        "REDIS_URL set the portal serves many researchers, and none may run a notebook as the "
        "portal's user. Unset it, and run the portal as root (each session gets a user of its "
        "own), use ALLOT_AGENT=kubernetes, or set ALLOT_SIM_JUPYTER=0"
    )
# The Python that runs sessions' JupyterLab and kernels (default: the portal's own). Sessions'
# users must be able to run it: a pyenv Python under a 0700 /root is out of their reach.
ALLOT_SESSIONS_PYTHON = envstr("ALLOT_SESSIONS_PYTHON", "") or None
# Persistent workspaces (issue 23): a user's sessions in a project share a home that outlives
# them, a folder here (default: ALLOT_SESSIONS_DIR/workspaces); under Kubernetes a
# PersistentVolumeClaim per (project, user) of this size and class ("": the cluster's default).
ALLOT_WORKSPACES_DIR = Path(envstr("ALLOT_WORKSPACES_DIR", "") or ALLOT_SESSIONS_DIR / "workspaces")
ALLOT_K8S_WORKSPACE_STORAGE_CLASS = envstr("ALLOT_K8S_WORKSPACE_STORAGE_CLASS", "") or None
ALLOT_K8S_WORKSPACE_SIZE = envstr("ALLOT_K8S_WORKSPACE_SIZE", "10Gi")
if not re.fullmatch(r"[1-9][0-9]*(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?", ALLOT_K8S_WORKSPACE_SIZE):
    raise ImproperlyConfigured(
        f"ALLOT_K8S_WORKSPACE_SIZE={ALLOT_K8S_WORKSPACE_SIZE!r}: a storage quantity such as 10Gi"
    )
ALLOT_USAGE_SAMPLE_INTERVAL_S = envfloat("ALLOT_USAGE_SAMPLE_INTERVAL_S", 10.0)
# Job history (issue 23): each run keeps the last ALLOT_RUN_LOG_LINES lines of its log; jobs that
# ended (finished, failed, timed out, stopped) more than ALLOT_JOB_RETENTION_DAYS ago are deleted
# in the background (0 keeps them for ever); a pending or running job never is.
ALLOT_RUN_LOG_LINES = envint("ALLOT_RUN_LOG_LINES", 1000, minimum=1)
ALLOT_JOB_RETENTION_DAYS = envint("ALLOT_JOB_RETENTION_DAYS", 90, minimum=0)
# Run-time predictions and pending jobs' ETAs are refreshed after a cycle at most this often.
ALLOT_ETA_INTERVAL_S = envfloat("ALLOT_ETA_INTERVAL_S", 30.0)
# Backfill with reservations (Allot's B rules): off by default, as in KAI.
ALLOT_BACKFILL = envbool("ALLOT_BACKFILL", False)
# Service bands (Allot's L rules, scheduler/bands.py): GPU-hour thresholds. Inside a project,
# among jobs of one priority class, a job that has held fewer GPU-hours starts first and a
# reclaim takes the one that has held more first (L2). On by default at "1,10" (Allot's default,
# docs/simulation.md §9.9); "off" gives KAI's own order (priority, then age).
ALLOT_SERVICE_BANDS = envbands("ALLOT_SERVICE_BANDS", "1,10")
# L3: a job of a lower band also preempts its own project's jobs in a higher band. Off by
# default: it evicts jobs that never asked for it, so it suits clusters whose jobs checkpoint.
ALLOT_BAND_PREEMPTION = envbool("ALLOT_BAND_PREEMPTION", False)
# Minimum run time before eviction (R7.4, scheduler/minruntime.py), the cluster defaults of the
# projects and departments that set none: a job is not taken by reclaim (other projects) or by
# preemption (its own project's higher-priority jobs) until it has run this long since its last
# start. 0 (the default, as in KAI): no protection; never (-1): never taken that way.
ALLOT_RECLAIM_MIN_RUNTIME = envminruntime("ALLOT_RECLAIM_MIN_RUNTIME")
ALLOT_PREEMPT_MIN_RUNTIME = envminruntime("ALLOT_PREEMPT_MIN_RUNTIME")


def envduration(name: str, default: str, zero: bool = True) -> float:
    """The variable as seconds: a duration such as "90s", "30m", "12h", "1d" or plain seconds
    (0 allowed where `zero`); `default` when unset or empty."""
    raw = os.environ.get(name, "").strip() or default
    try:
        return parse_duration(raw, zero)
    except ValueError:
        least = "0 for off" if zero else "more than 0"
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a duration: use e.g. 30m, 12h or 1d, or plain seconds ({least})"
        ) from None


# Fair share over time (R2.9, E10; KAI's time-based fair share, issue 23): each project's
# GPU-hours over the last ALLOT_FAIRSHARE_WINDOW, decayed with ALLOT_FAIRSHARE_HALF_LIFE and
# normalised to the cluster's capacity, lower its share of idle GPUs over quota by
# ALLOT_FAIRSHARE_K (KAI's kValue). A half-life of 0 (the default) turns it off, as in KAI.
ALLOT_FAIRSHARE_HALF_LIFE = envduration("ALLOT_FAIRSHARE_HALF_LIFE", "0")
ALLOT_FAIRSHARE_WINDOW = envduration("ALLOT_FAIRSHARE_WINDOW", "7d", zero=False)
ALLOT_FAIRSHARE_K = envfloat("ALLOT_FAIRSHARE_K", 1.0)
# The in-process cycle timer of the embedded default (started by the web process only).
ALLOT_EMBEDDED_CYCLE = envbool("ALLOT_EMBEDDED_CYCLE", EMBEDDED)
ALLOT_NOTIFICATIONS = envbool("ALLOT_NOTIFICATIONS", True)  # email, toasts and webhooks
ALLOT_WEBHOOK_BACKOFF_S = [
    float(value) for value in envlist("ALLOT_WEBHOOK_BACKOFF_S", "1,4,16,60")
]  # seconds before each retry of a failed webhook delivery
# Webhooks reach public addresses only (portal/notify/targets.py); a cluster admin lets a receiver
# on an internal network in by listing its networks here (CIDRs, e.g. 10.20.0.0/16).
ALLOT_WEBHOOK_ALLOWED_NETWORKS = envnetworks("ALLOT_WEBHOOK_ALLOWED_NETWORKS")
# The audit log (portal/audit): entries older than this many days are deleted hourly; 0 keeps
# them all.
ALLOT_AUDIT_RETENTION_DAYS = envint("ALLOT_AUDIT_RETENTION_DAYS", 365)
ALLOT_ADMIN_USERNAME = envstr("ALLOT_ADMIN_USERNAME", "admin")
ALLOT_ADMIN_PASSWORD = envsecret("ALLOT_ADMIN_PASSWORD")

# --- Auth, REST API, OpenAPI --------------------------------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    # not a rule: a changed password revokes the user's API tokens (issue 22 item 7); keep it
    {"NAME": "portal.tenancy.passwords.RevokeTokensOnPasswordChange"},
]
# Every way in (/login/, /admin/login/, POST /api/v1/auth/token/) signs in through
# authenticate() with the request, so django-axes sees each failure: ALLOT_LOGIN_FAILURE_LIMIT
# failures for one account (from anywhere) or from one address (for any account) within
# ALLOT_LOGIN_LOCKOUT_MIN minutes lock that account or address out for as long - a 429, even
# for the right password - and axes logs each lockout (logger "axes", with the account and the
# address). Tries during a lockout do not extend it. A cluster admin unlocks at once with
# `manage.py axes_reset_username NAME` or `axes_reset_ip ADDRESS` (or in /admin/).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = envint("ALLOT_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=envint("ALLOT_LOGIN_LOCKOUT_MIN", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = ["ip_address", "username"]
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "portal.web.lockout.locked_out"
AXES_CLIENT_IP_CALLABLE = "portal.core.addresses.client_address"
AXES_SENSITIVE_PARAMETERS: list[str] = []  # logs name the account and address, never a password
AXES_VERBOSE = False  # no banner at each start; its log lines still name account and address
AXES_DISABLE_ACCESS_LOG = True  # no row per successful sign-in; failures and lockouts are kept
# Reverse proxies in front of the portal that append the client's address to X-Forwarded-For;
# 0: the header is ignored (anyone can write it) and the client is the socket's peer. The login
# throttle and the lockouts both find the client this way (portal/api/throttling.py).
ALLOT_TRUSTED_PROXIES = envint("ALLOT_TRUSTED_PROXIES", 0)
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

# Single sign-on with OpenID Connect (portal/tenancy/oidc.py, docs/web-ui.md "Single sign-on"):
# set the issuer (its /.well-known/openid-configuration is read at the first sign-in) and the
# client the provider registered for this portal, whose redirect URI is
# https://PORTAL/oidc/callback/. The provider's `groups` claim gives project roles by the rules
# cluster admins edit at /sso/rules/.
# ALLOT_LOCAL_LOGIN=0 turns passwords off: /login/ offers single sign-on only, and a password
# sent to /login/, /admin/login/ or POST /api/v1/auth/token/ is refused (API tokens keep working).
ALLOT_OIDC_ISSUER = (envstr("ALLOT_OIDC_ISSUER", "") or "").rstrip("/")
ALLOT_OIDC_CLIENT_ID = envstr("ALLOT_OIDC_CLIENT_ID", "")
ALLOT_OIDC_CLIENT_SECRET = envsecret("ALLOT_OIDC_CLIENT_SECRET") or ""
ALLOT_OIDC_SCOPES = envstr("ALLOT_OIDC_SCOPES", "openid profile email groups")
ALLOT_OIDC_GROUPS_CLAIM = envstr("ALLOT_OIDC_GROUPS_CLAIM", "groups")
ALLOT_OIDC_USERNAME_CLAIM = envstr("ALLOT_OIDC_USERNAME_CLAIM", "preferred_username")
ALLOT_OIDC_PROVIDER_NAME = envstr("ALLOT_OIDC_PROVIDER_NAME", "single sign-on")  # on the button
# How the portal proves itself at the provider's token endpoint: client_secret_basic (the id and
# secret form-encoded, then in the Basic header, RFC 6749 2.3.1) or client_secret_post; empty:
# the first of those the provider advertises (token_endpoint_auth_methods_supported).
ALLOT_OIDC_TOKEN_AUTH_METHOD = envchoice(
    "ALLOT_OIDC_TOKEN_AUTH_METHOD", "", ("", "client_secret_basic", "client_secret_post")
)
ALLOT_LOCAL_LOGIN = envbool("ALLOT_LOCAL_LOGIN", True)
if ALLOT_OIDC_ISSUER and not (ALLOT_OIDC_CLIENT_ID and ALLOT_OIDC_CLIENT_SECRET):
    raise ImproperlyConfigured(
        "ALLOT_OIDC_ISSUER needs ALLOT_OIDC_CLIENT_ID and ALLOT_OIDC_CLIENT_SECRET (or "
        "ALLOT_OIDC_CLIENT_SECRET_FILE): the client the provider registered for this portal"
    )
if ALLOT_OIDC_ISSUER and "openid" not in ALLOT_OIDC_SCOPES.split():
    raise ImproperlyConfigured(f"ALLOT_OIDC_SCOPES={ALLOT_OIDC_SCOPES!r} must include openid")
if not ALLOT_LOCAL_LOGIN and not ALLOT_OIDC_ISSUER:
    raise ImproperlyConfigured(
        "ALLOT_LOCAL_LOGIN=0 needs ALLOT_OIDC_ISSUER: without passwords and without single "
        "sign-on nobody could sign in"
    )
AUTHENTICATION_BACKENDS.append("portal.tenancy.oidc.OIDCBackend")  # signs in with ID token claims

# The largest request body (Django's DATA_UPLOAD_MAX_MEMORY_SIZE): the API answers a larger one
# with a JSON 400 under `body`, and bounds its JSON's nesting (portal/api/parsers.py).
DATA_UPLOAD_MAX_MEMORY_SIZE = envint("ALLOT_MAX_BODY_BYTES", 2_621_440, minimum=1024)
# GPUs one pod may ask for. A pod larger than every node today is accepted and waits for a node
# to join (issue 24 item 10); only more than any node type has is refused: DGX/HGX have 8, a
# handful of servers 16.
ALLOT_MAX_GPUS_PER_POD = envint("ALLOT_MAX_GPUS_PER_POD", 64, minimum=1)


def envquantity(name: str, parse) -> int:
    """A Kubernetes quantity ("500m", "2", "16Gi") read by `parse` (scheduler.quantity's
    cpu_millis or memory_bytes); unset or empty is 0."""
    text = envstr(name, "") or ""
    try:
        return parse(text) if text.strip() else 0
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}: {exc}") from None


# What a job that does not say asks for per pod when its project sets no default either (issue
# 26): CPU cores ("500m", "2") and memory ("4Gi"). Unset: 0, nothing asked.
ALLOT_DEFAULT_CPU_MILLIS = envquantity("ALLOT_DEFAULT_CPU", cpu_millis)
ALLOT_DEFAULT_MEMORY_BYTES = envquantity("ALLOT_DEFAULT_MEMORY", memory_bytes)

# What one researcher may queue (issue 32 item 8: two bulk requests queued 2,000 pending jobs in
# 2.3 s and slowed every other user's overview): jobs submitted per user (single or in bulk,
# each job counted; a 429 with Retry-After past it), pending jobs per user and per project (a 409
# naming the cap), and the bytes of one job's environment (a 400). The benchmarks raise them.
ALLOT_SUBMIT_RATE = envstr("ALLOT_SUBMIT_RATE", "1000/min")
ALLOT_MAX_PENDING_PER_USER = envint("ALLOT_MAX_PENDING_PER_USER", 1000, minimum=1)
ALLOT_MAX_PENDING_PER_PROJECT = envint("ALLOT_MAX_PENDING_PER_PROJECT", 5000, minimum=1)
ALLOT_MAX_ENVIRONMENT_BYTES = envint("ALLOT_MAX_ENVIRONMENT_BYTES", 32 * 1024, minimum=256)

REST_FRAMEWORK = {
    # Token first: its WWW-Authenticate header makes a missing or bad token a 401, not a 403
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "portal.api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "portal.api.pagination.Pagination",
    # DRF's JSONRenderer's bytes, encoded by orjson (issue 39: 0.44 -> 0.12 ms a page of 50 jobs)
    "DEFAULT_RENDERER_CLASSES": ["portal.api.renderers.FastJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["portal.api.parsers.StorableJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "portal.api.errors.exception_handler",
    "COERCE_DECIMAL_TO_STRING": False,
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "DEFAULT_THROTTLE_RATES": {"login": envstr("ALLOT_LOGIN_RATE", "30/min")},
    "NUM_PROXIES": ALLOT_TRUSTED_PROXIES,
}
if DEBUG:
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"].append(
        "rest_framework.renderers.BrowsableAPIRenderer"
    )

SPECTACULAR_SETTINGS = {
    "TITLE": "Allot API",
    "DESCRIPTION": "Projects, quotas, nodes and GPU jobs of an Allot cluster.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # the error answers of every operation (portal/api/schema.py), after the enums' default hook
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "portal.api.schema.document_errors",
    ],
}

# --- Internationalisation, static files ---------------------------------------------------------

LANGUAGE_CODE = "en-us"
TIME_ZONE = envstr("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(envstr("STATIC_ROOT", str(VAR_DIR / "static")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on every start without it
STATICFILES_DIRS = [p for p in [BASE_DIR / "static"] if p.is_dir()]
# plotly.js from the installed plotly package (never a CDN): /static/vendor/plotly/plotly.min.js
STATICFILES_DIRS.append(("vendor/plotly", PLOTLY_JS_DIR))

# --- Production hardening (all on unless DEBUG; `manage.py check --deploy` stays clean) -------

SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_REDIRECT_EXEMPT = [r"^healthz/$"]  # container health checks speak plain HTTP
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", not DEBUG)
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", not DEBUG)
# Over HTTPS the portal's cookies carry the `__Host-` prefix: the browser then takes them only
# from the portal's own host, never set by a page of a sibling host (a notebook's origin is often
# the same site as the portal) for the parent domain - cookie tossing (issue 32).
if SESSION_COOKIE_SECURE:
    SESSION_COOKIE_NAME = "__Host-sessionid"
if CSRF_COOKIE_SECURE:
    CSRF_COOKIE_NAME = "__Host-csrftoken"
if envbool("SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Content-Security-Policy (django-csp): the portal's pages load scripts, styles, images and
# connections from the portal only, with no inline code but what carries the response's nonce
# (`request.csp_nonce`): Swagger UI's start-up script and style, and the <style> elements
# plotly.js would otherwise create (templates/web/plotly_styles.html). `'self'` in connect-src
# covers the same host's ws:/wss: (CSP Level 3). A response that has a policy keeps it: Jupyter
# sessions come through the proxy with Jupyter Server's own (JupyterLab needs inline code).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, NONCE],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "frame-ancestors": [NONE],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
    },
}
if ALLOT_SESSIONS_ORIGIN is not None:  # "Access server" posts, then goes to the notebook
    CONTENT_SECURITY_POLICY["DIRECTIVES"]["form-action"].append(ALLOT_SESSIONS_ORIGIN.source)
if ALLOT_OIDC_ISSUER:  # "Sign out" posts to /logout/, which redirects to the provider's logout
    CONTENT_SECURITY_POLICY["DIRECTIVES"]["form-action"].append(
        "{0.scheme}://{0.netloc}".format(urlsplit(ALLOT_OIDC_ISSUER))
    )

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
    # axes: failures and lockouts (WARNING), not every successful sign-in
    # "django": Django's own console handler would print each line a second time beside root's;
    # runserver's line per request only for developers, so `make run` keeps its sign-in in view
    "loggers": {"django": {"handlers": []}, "django.db.backends": {"level": "WARNING"},
                "django.channels.server": {"level": "INFO" if DEBUG else "WARNING"},
                "axes": {"level": "WARNING"}},
}  # fmt: skip

# --- What no Jupyter session may read (last: every NAME_FILE secret is known by now) ---------

# Closed to other users (files 0600, directories 0700, or 0711 on the way to the sessions) before
# each local session starts: var/ (the SQLite database, the sessions' descriptions and their
# tokens), the SQLite database wherever it is, .env, every NAME_FILE secret, and the paths listed
# in ALLOT_SESSIONS_PRIVATE_PATHS (comma-separated).
ALLOT_SESSIONS_PRIVATE_PATHS = [
    VAR_DIR,
    BASE_DIR / ".env",
    *(
        Path(f"{DATABASES['default']['NAME']}{suffix}")
        for suffix in ("", "-wal", "-shm")
        if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"
    ),
    *SECRET_FILES,
    *(Path(path) for path in envlist("ALLOT_SESSIONS_PRIVATE_PATHS", "")),
]
# Nor may a session connect to the portal's database or broker, which commonly trust local
# connections: an iptables chain refuses every TCP connection the sessions' group opens to them
# (agents/firewall.py), DATABASE_URL's and REDIS_URL's host and port and those of the URLs in
# ALLOT_SESSIONS_GUARDED_URLS. ALLOT_SESSIONS_FIREWALL=0 turns it off: only where each of those
# services asks for a password no notebook can know.
ALLOT_SESSIONS_FIREWALL = envbool("ALLOT_SESSIONS_FIREWALL", True)
ALLOT_SESSIONS_GUARDED_URLS = [
    DATABASE_URL,
    *([REDIS_URL] if REDIS_URL else []),
    *envlist("ALLOT_SESSIONS_GUARDED_URLS", ""),
]
