"""The Helm chart (deploy/helm/allot/, issue 35): `helm lint` clean, every rendered document
valid against Kubernetes' own schema, the pods' probes, resources and service account,
values.schema.json refusing bad values by name, and deploy/kubernetes/allot.yaml equal to the
chart's rendering. tests/k8s/test_helm_on_lab.py applies it to a real API server."""

from __future__ import annotations

import subprocess
import sys

import kubernetes_validate
import pytest

from tests.deploy.helm import CHART, ROOT, helm, render

pytestmark = pytest.mark.built  # Helm is built with Go (tests/binaries.py)

TRIAL = ("--set", "ingress.enabled=true", "--set", "ingress.host=allot.example.org",
         "--set", "ingress.notebooksHost=*.nb.example.org",
         "--set", "sessionsOrigin=https://*.nb.example.org")  # fmt: skip
EXTERNAL = ("--set", "postgresql.enabled=false",
            "--set", "database.url=postgres://a:b@db/allot",
            "--set", "redisServer.enabled=false",
            "--set", "redis.url=redis://redis:6379/0")  # fmt: skip


def by_name(documents: list[dict], kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in documents if d["kind"] == kind}


@pytest.mark.parametrize("options", [(), TRIAL, EXTERNAL], ids=["defaults", "ingress", "external"])
def test_helm_lint_is_clean(options):
    done = helm("lint", "--strict", str(CHART), *options)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 chart(s) failed" in done.stdout and "[WARNING]" not in done.stdout, done.stdout


@pytest.mark.parametrize("options", [(), TRIAL, EXTERNAL], ids=["defaults", "ingress", "external"])
def test_every_rendered_document_is_valid(options):
    documents = render(*options)
    assert documents
    for document in documents:
        kubernetes_validate.validate(document, "1.30", strict=True)


def test_web_worker_notifier_and_beat_carry_probes_resources_and_the_service_account():
    documents = render()
    deployments = by_name(documents, "Deployment")
    assert set(deployments) == {"allot-web", "allot-worker", "allot-notifier", "allot-beat"}
    for name, deployment in deployments.items():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == "allot", name
        (container,) = pod["containers"]
        assert container["livenessProbe"] and container["readinessProbe"], name
        assert container["resources"]["requests"]["cpu"], name
        assert container["resources"]["requests"]["memory"], name
        assert container["resources"]["limits"]["memory"], name
        assert {"name": "ALLOT_AGENT", "value": "kubernetes"} in container["env"], name
        assert container["envFrom"] == [{"secretRef": {"name": "allot-env"}}], name
    web = deployments["allot-web"]["spec"]["template"]["spec"]
    assert web["containers"][0]["readinessProbe"]["httpGet"] == {"path": "/healthz/",
                                                                 "port": "http"}  # fmt: skip
    assert web["initContainers"][0]["command"][-2:] == ["migrate", "--noinput"]
    assert deployments["allot-beat"]["spec"]["replicas"] == 1
    assert deployments["allot-beat"]["spec"]["strategy"] == {"type": "Recreate"}
    budgets = by_name(documents, "PodDisruptionBudget")
    assert set(budgets) == {"allot-web", "allot-worker", "allot-notifier"}


def test_the_health_endpoint_the_web_probe_names_exists():
    """The probe's path is a route of the portal (portal/urls.py), not a guess."""
    urls = (ROOT / "portal" / "urls.py").read_text()
    assert 'path("healthz/", healthz' in urls


def test_the_secret_holds_the_settings_and_the_in_chart_stores_are_reachable():
    documents = render("--set", "oidc.issuer=https://idp.example.org", "--set",
                       "oidc.clientId=allot", "--set", "oidc.clientSecret=s3cret",
                       "--set", "metricsToken=m3trics")  # fmt: skip
    secret = by_name(documents, "Secret")["allot-env"]["stringData"]
    assert len(secret["SECRET_KEY"]) == 64
    assert secret["DATABASE_URL"] == (
        f"postgres://allot:{secret['POSTGRES_PASSWORD']}@allot-postgres:5432/allot"
    )
    assert secret["REDIS_URL"] == "redis://allot-redis:6379/0"
    assert secret["ALLOT_OIDC_CLIENT_SECRET"] == "s3cret"
    assert secret["ALLOT_METRICS_TOKEN"] == "m3trics"
    assert set(by_name(documents, "StatefulSet")) == {"allot-postgres", "allot-redis"}
    assert {"allot-postgres", "allot-redis", "allot-web"} <= set(by_name(documents, "Service"))
    external = render(*EXTERNAL, "--set", "existingSecret=mine")
    assert not by_name(external, "StatefulSet") and not by_name(external, "Secret")
    web = by_name(external, "Deployment")["allot-web"]["spec"]["template"]["spec"]
    assert web["containers"][0]["envFrom"] == [{"secretRef": {"name": "mine"}}]


def test_the_ingress_routes_the_portal_and_the_notebooks_origin_to_the_web_service():
    (ingress,) = by_name(render(*TRIAL), "Ingress").values()
    rules = {
        r["host"]: r["http"]["paths"][0]["backend"]["service"] for r in ingress["spec"]["rules"]
    }
    assert rules == {h: {"name": "allot-web", "port": {"name": "http"}}
                     for h in ("allot.example.org", "*.nb.example.org")}  # fmt: skip
    web = by_name(render(*TRIAL), "Deployment")["allot-web"]["spec"]["template"]["spec"]
    env = web["containers"][0]["env"]
    assert {"name": "ALLOT_SESSIONS_ORIGIN", "value": "https://*.nb.example.org"} in env


def test_the_cluster_role_is_the_agents_least_rights():
    (role,) = by_name(render(), "ClusterRole").values()
    granted = {r: set(rule["verbs"]) for rule in role["rules"] for r in rule["resources"]}
    assert granted["pods/binding"] == {"create"} and granted["pods/status"] == {"patch"}
    assert granted["nodes"] == {"get", "list", "watch"}
    assert "secrets" not in granted and "*" not in granted
    assert all("*" not in rule["verbs"] for rule in role["rules"])
    (binding,) = by_name(render(), "ClusterRoleBinding").values()
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "allot",
                                    "namespace": "allot-system"}]  # fmt: skip


@pytest.mark.parametrize(
    ("option", "error"),
    [
        ("web.replicas=-1", "at '/web/replicas': minimum: got -1, want 0"),
        ("worker.replicas=two", "at '/worker/replicas': got string, want integer"),
        ("web.replica=2", "at '/web': additional properties 'replica' not allowed"),  # a typo
        ("imageTag=1.0", "at '': additional properties 'imageTag' not allowed"),
        ("service.type=Internal", "at '/service/type': value must be one of 'ClusterIP'"),
        ("secretKey=short", "at '/secretKey': 'short' does not match pattern"),
        ("database.url=db.example.org", "at '/database/url': 'db.example.org' does not match"),
        ("podDisruptionBudget.maxUnavailable=-1", "at '/podDisruptionBudget/maxUnavailable'"),
    ],
)
def test_the_schema_refuses_a_bad_value_naming_it(option, error):
    """helm exits non-zero before rendering anything, naming the value and the reason."""
    done = helm("template", "allot", str(CHART), "--set", option)
    assert done.returncode != 0 and done.stdout == "", done.stdout
    assert "values don't meet the specifications of the schema" in done.stderr, done.stderr
    assert error in done.stderr, done.stderr


def test_a_numeric_image_tag_is_refused_as_a_number():
    """A tag given as a number (`--set-json image.tag=1.0`, or `tag: 1.0` in a values file, which
    YAML reads as the float 1) is refused: the schema wants a string."""
    done = helm("template", "allot", str(CHART), "--set-json", "image.tag=1.0")
    assert done.returncode != 0 and done.stdout == "", done.stdout
    assert "at '/image/tag': got number, want string" in done.stderr, done.stderr


def test_the_raw_manifest_is_the_charts_rendering():
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "render-manifest"), "--check"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
