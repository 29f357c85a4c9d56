"""docker-compose.yml and the Dockerfile, checked without a Docker engine (none exists here)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
APP_SERVICES = ("web", "worker", "notifier", "beat")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


@pytest.fixture(scope="module")
def services(compose) -> dict:
    return compose["services"]


@pytest.fixture(scope="module")
def dockerfile() -> list[str]:
    """The Dockerfile's instructions, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"]


def command(service: dict) -> str:
    raw = service["command"]
    return " ".join(raw) if isinstance(raw, list) else raw


def test_it_runs_postgres_redis_web_worker_and_beat(services):
    assert {"postgres", "redis", "web", "worker", "beat"} <= set(services)
    assert services["postgres"]["image"].startswith("postgres:15")
    assert services["redis"]["image"].startswith("redis:")


def test_web_serves_the_asgi_application_from_several_worker_processes_on_port_8000(services):
    web = services["web"]
    assert command(web).startswith("gunicorn portal.asgi:application ")
    assert "--worker-class uvicorn_worker.UvicornWorker" in command(web)
    assert "--workers" in command(web) and "--bind 0.0.0.0:8000" in command(web)
    assert any(str(port).endswith(":8000") for port in web["ports"])


def test_worker_and_beat_run_the_portals_celery_app(services):
    assert re.match(r"celery --app portal worker\b", command(services["worker"]))
    assert re.match(r"celery --app portal beat\b", command(services["beat"]))
    assert re.match(r"celery --app portal worker --queues notify\b", command(services["notifier"]))


def test_every_service_has_a_health_check(services):
    for name in ("postgres", "redis", *APP_SERVICES):
        check = services[name]["healthcheck"]["test"]
        assert check[0] in ("CMD", "CMD-SHELL") and len(check) > 1, name


def test_the_web_health_check_asks_a_url_the_portal_serves():
    from django.urls import resolve

    compose_text = (ROOT / "docker-compose.yml").read_text()
    (path,) = re.findall(r"http://127\.0\.0\.1:8000(/[^'\"]*)", compose_text)
    assert resolve(path).url_name == "healthz"


def test_the_apps_start_after_healthy_postgres_and_redis_and_the_migrations(services):
    for name in APP_SERVICES:
        depends = services[name]["depends_on"]
        assert depends["postgres"]["condition"] == "service_healthy", name
        assert depends["redis"]["condition"] == "service_healthy", name
        assert depends["migrate"]["condition"] == "service_completed_successfully", name
    assert command(services["migrate"]) == "python manage.py migrate --noinput"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_the_apps_share_one_production_environment_pointing_at_the_services(services):
    envs = [services[name]["environment"] for name in (*APP_SERVICES, "migrate")]
    assert all(env == envs[0] for env in envs)
    env = envs[0]
    assert re.match(r"postgres://allot:.*@postgres:5432/allot$", env["DATABASE_URL"])
    assert env["REDIS_URL"] == "redis://redis:6379/0"
    assert env["DEBUG"] == "0"
    assert "?" in env["SECRET_KEY"]  # required: compose refuses to start without it
    assert "127.0.0.1" in env["ALLOWED_HOSTS"]  # the health check's own Host header


def test_the_environment_names_only_variables_the_settings_read(services):
    settings_text = (ROOT / "portal" / "settings.py").read_text()
    for name in services["web"]["environment"]:
        assert re.search(rf"""["']{name}["']""", settings_text), name


def test_every_app_service_builds_the_one_image(services):
    images = {services[name]["image"] for name in (*APP_SERVICES, "migrate")}
    assert images == {"allot:latest"}
    assert all(services[name]["build"] == "." for name in APP_SERVICES)


def test_the_image_is_python_311_slim_installs_the_pins_collects_static_and_runs_unprivileged(
    dockerfile,
):
    assert dockerfile[0] == "FROM python:3.11-slim"
    assert "COPY requirements.txt ." in dockerfile
    assert any(line == "RUN pip install -r requirements.txt" for line in dockerfile)
    assert any("manage.py collectstatic --noinput" in line for line in dockerfile)
    users = [line.split()[1] for line in dockerfile if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0")
    install = dockerfile.index("RUN pip install -r requirements.txt")
    assert install < dockerfile.index("COPY . .")  # code changes keep the dependency layer


def test_the_beat_schedule_runs_the_cycle_every_2_s_and_drops_stale_ticks():
    from portal.celery import app

    entry = app.conf.beat_schedule["scheduling-cycle"]
    assert entry["task"] == "portal.scheduling.tasks.run_cycle"
    assert entry["schedule"] == 2.0
    assert 0 < entry["options"]["expires"] < entry["schedule"]
    app.loader.import_default_modules()  # what a worker does at start: autodiscovery
    assert "portal.scheduling.tasks.run_cycle" in app.tasks


def resolved_environment(services) -> dict[str, str]:
    """The apps' environment as compose would pass it with an .env holding only SECRET_KEY."""
    given = {"SECRET_KEY": "compose-test-" + "k" * 50}

    def resolve(value: str) -> str:
        def one(match: re.Match) -> str:
            name, default = match.group(1), match.group(3) or ""
            return given.get(name, default)

        return re.sub(r"\$\{(\w+)(:?[-?])?([^}]*)\}", one, str(value))

    return {name: resolve(value) for name, value in services["web"]["environment"].items()}


def run_manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ALLOT_", "DJANGO_"))}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env={**clean, **env},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_compose_environment_passes_djangos_deployment_checks(services):
    done = run_manage(
        resolved_environment(services), "check", "--deploy", "--fail-level", "WARNING"
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_images_collectstatic_step_works_with_production_settings(tmp_path):
    env = {"SECRET_KEY": "collectstatic-only", "DEBUG": "0", "STATIC_ROOT": str(tmp_path),
           "DATABASE_URL": f"sqlite:///{tmp_path / 'build.sqlite3'}"}  # fmt: skip
    done = run_manage(env, "collectstatic", "--noinput")
    assert done.returncode == 0, done.stderr
    assert any(tmp_path.rglob("*.css")) and any(tmp_path.rglob("*.js"))
