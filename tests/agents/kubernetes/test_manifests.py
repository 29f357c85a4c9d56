"""Every object the Kubernetes agent would send, validated against the official Kubernetes
schema (kubernetes-validate, strict: unknown fields fail), and what each must say."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import kubernetes_validate
import pytest

from agents.base import JobSpec, PodSpec
from agents.kubernetes import manifests, names, sessions

K8S = "1.30"
NOW = datetime(2026, 11, 1, tzinfo=UTC)


def valid(obj: dict) -> dict:
    kubernetes_validate.validate(obj, K8S, strict=True)
    return obj


def job(**fields) -> JobSpec:
    base = {"project": "team-a", "name": "train-1", "placement": (PodSpec("dgx1-1", (0, 1)),),
            "started_at": NOW, "image": "gcr.io/run-ai-demo/quickstart", "gpus": 2.0,
            "user": "bob"}  # fmt: skip
    return JobSpec(**{**base, **fields})


def container(pod: dict) -> dict:
    return pod["spec"]["containers"][0]


def env(pod: dict) -> dict:
    return {item["name"]: item["value"] for item in container(pod).get("env", [])}


def test_a_whole_gpu_pod_asks_for_its_gpus_and_names_allot_as_scheduler():
    (pod,) = manifests.job_pods(job())
    valid(pod)
    assert pod["spec"]["schedulerName"] == "allot"
    assert container(pod)["resources"]["limits"] == {"nvidia.com/gpu": 2}
    assert pod["metadata"]["namespace"] == "allot-team-a"
    labels = pod["metadata"]["labels"]
    assert (labels["allot.io/project"], labels["allot.io/job"], labels["allot.io/user"],
            labels["allot.io/type"]) == ("team-a", "train-1", "bob", "train")  # fmt: skip
    assert "nodeName" not in pod["spec"]  # placed by a binding, not by the default scheduler


def test_a_fraction_gets_its_device_and_share_but_no_gpu_request():
    notebook = job(name="nb", type="interactive", gpus=0.5,
                   placement=(PodSpec("dgx1-1", (3,), 0.5),), ports=(8888,))  # fmt: skip
    (pod,) = manifests.job_pods(notebook, gpu_memory_bytes={"dgx1-1": 32 * 2**30})
    valid(pod)
    assert "resources" not in container(pod)
    assert env(pod) | {} == {"NVIDIA_VISIBLE_DEVICES": "3", "ALLOT_GPU_FRACTION": "0.5",
                             "ALLOT_GPU_MEMORY_MIB": "16384"}  # fmt: skip
    assert pod["spec"]["restartPolicy"] == "Always"
    assert manifests.shared_devices(notebook) == [("dgx1-1", 3)]
    reservation = valid(manifests.reservation_pod("dgx1-1", 3))
    assert container(reservation)["resources"]["limits"] == {"nvidia.com/gpu": 1}
    assert reservation["spec"]["schedulerName"] == "allot"


def test_a_gang_gets_one_pod_per_placement_with_its_own_name():
    nodes = (PodSpec("dgx1-1", tuple(range(8))), PodSpec("dgx1-2", tuple(range(8))))
    gang = job(name="dist", pods=2, gpus=8.0, placement=nodes)
    pods = [valid(pod) for pod in manifests.job_pods(gang)]
    assert [p["metadata"]["name"] for p in pods] == ["dist-0", "dist-1"]
    assert [p["metadata"]["annotations"]["allot.io/node"] for p in pods] == ["dgx1-1", "dgx1-2"]


def test_command_args_env_and_pvcs_are_passed_on():
    full = job(command="python train.py --data /data", args=("--epochs", "3"),
               environment=(("SEED", "1"),), volumes=(("test", "/tmp/pvc1mount", False),
                                                      ("ro-data", "/data", True)))  # fmt: skip
    (pod,) = manifests.job_pods(full)
    valid(pod)
    main = container(pod)
    assert main["command"] == ["python", "train.py", "--data", "/data"]
    assert main["args"] == ["--epochs", "3"] and env(pod) == {"SEED": "1"}
    mounts = {m["mountPath"]: m for m in main["volumeMounts"]}
    assert mounts["/tmp/pvc1mount"]["readOnly"] is False and mounts["/data"]["readOnly"] is True
    claims = [v["persistentVolumeClaim"]["claimName"] for v in pod["spec"]["volumes"]
              if "persistentVolumeClaim" in v]  # fmt: skip
    assert claims == ["test", "ro-data"]


def test_a_jupyter_job_gets_a_service_and_an_ingress_with_runais_path():
    notebook = job(name="a-1-1-jupyter", type="interactive", ports=(8888,),
                   service_type="ingress")  # fmt: skip
    svc = valid(manifests.service(notebook))
    assert svc["spec"]["ports"][0]["port"] == 8888
    ing = valid(manifests.ingress(notebook, "gpu.example.org", class_name="nginx"))
    rule = ing["spec"]["rules"][0]
    assert rule["http"]["paths"][0]["path"] == "/team-a-a-1-1-jupyter-8888"
    assert manifests.ingress_urls(notebook, "gpu.example.org") == [
        {"port": 8888, "url": "https://gpu.example.org/team-a-a-1-1-jupyter-8888"}]  # fmt: skip
    assert manifests.ingress(job(), "gpu.example.org") is None


@pytest.mark.parametrize(
    ("service_type", "want"),
    [("nodeport", "NodePort"), ("loadbalancer", "LoadBalancer"), ("ingress", None),
     ("portforward", None), ("", None)],
)  # fmt: skip
def test_a_services_type_is_the_jobs_service_type(service_type, want):
    """Issue 25 item 3: `service_type=nodeport` made a ClusterIP Service."""
    svc = valid(manifests.service(job(ports=(8888,), service_type=service_type)))
    assert svc["spec"].get("type") == want


def test_the_binding_and_the_namespace_are_valid():
    valid(manifests.binding("allot-team-a", "train-1-0", "dgx1-1"))
    namespace = valid(manifests.namespace("team-a"))
    assert namespace["metadata"]["labels"]["allot.io/project"] == "team-a"


@pytest.mark.parametrize("user", ["alice@example.org", "Bob Smith", "-x-", "é"])
def test_any_username_becomes_a_valid_label_or_none(user):
    (pod,) = manifests.job_pods(job(user=user))
    valid(pod)


def test_an_invalid_object_fails_validation():
    (pod,) = manifests.job_pods(job())
    pod["spec"]["containers"][0]["gpus"] = 2  # not a field of Container
    with pytest.raises(kubernetes_validate.ValidationError):
        valid(pod)


# --- issue 22: a notebook pod gets nothing of the portal's -------------------------------------

PORTAL_SECRET = "the-portal-session-secret-0123456789abcdef"


def test_a_notebook_pod_gets_no_service_account_token_and_no_portal_secret():
    """Launch Jupyter's pod: no service-account token mounted, no Service variables, no value
    taken from a Secret, and of the portal's session secret only the HMAC of this one job."""
    notebook = job(name="nb", type="interactive", gpus=0.5, image="jupyter/base-notebook",
                   placement=(PodSpec("dgx1-1", (3,), 0.5),), ports=(8888,),
                   environment=(("SEED", "1"),))  # fmt: skip
    (pod,) = manifests.job_pods(notebook, session_secret=PORTAL_SECRET)
    valid(pod)
    spec = pod["spec"]
    assert spec["automountServiceAccountToken"] is False
    assert spec["enableServiceLinks"] is False
    assert "serviceAccountName" not in spec
    # its one volume is bob's workspace claim in team-a, at the notebook's home (issue 23)
    claim = {"claimName": sessions.workspace_claim_name("bob")}
    assert spec["volumes"] == [{"name": "workspace", "persistentVolumeClaim": claim}]
    assert container(pod)["volumeMounts"] == [{"name": "workspace", "mountPath": "/home/jovyan"}]
    main = container(pod)
    assert "envFrom" not in main and all("valueFrom" not in item for item in main["env"])
    assert env(pod) == {
        "SEED": "1", "NVIDIA_VISIBLE_DEVICES": "3", "ALLOT_GPU_FRACTION": "0.5",
        "JUPYTER_TOKEN": sessions.session_token(PORTAL_SECRET, "team-a", "nb"),
    }  # fmt: skip
    assert PORTAL_SECRET not in json.dumps(pod)
    other = sessions.session_token(PORTAL_SECRET, "team-b", "nb")
    assert env(pod)["JUPYTER_TOKEN"] != other  # one job's token opens no other session


@pytest.mark.parametrize("kind", ["train", "interactive"])
def test_every_pod_allot_creates_runs_without_a_service_account_token(kind):
    (pod,) = manifests.job_pods(job(type=kind, environment=(("A", "b"),)))
    reservation = manifests.reservation_pod("dgx1-1", 0)
    for made in (valid(pod), valid(reservation)):
        assert made["spec"]["automountServiceAccountToken"] is False
        assert made["spec"]["enableServiceLinks"] is False


def test_the_manifests_and_the_sessions_modules_import_one_way():
    """sessions finds a pod's Service through `names`, never through `manifests`."""
    source = Path(sessions.__file__).read_text()
    assert "manifests" not in source.split('"""', 2)[2]  # (its docstring may name it)
    assert manifests.namespace_for is names.namespace_for


def test_every_valid_project_name_gets_a_namespace_of_its_own():
    """Issue 32 item 2: `allot-<project>` cut at 63 characters gave two projects whose names
    share their first 57 characters one namespace."""
    from agents.kubernetes.names import namespace_for
    from portal.core.validators import DNS_LABEL

    first, second = "a" * 57 + "-first", "a" * 57 + "-second"
    assert namespace_for(first) != namespace_for(second)
    for project in (first, second, "x" * 63):
        assert len(namespace_for(project)) <= 63 and DNS_LABEL.match(namespace_for(project))
    assert namespace_for("team-a") == "allot-team-a"  # a name that fits keeps its namespace
    assert namespace_for("b" * 57) == "allot-" + "b" * 57


def test_a_gang_rendezvouses_through_a_headless_service_named_after_the_job():
    nodes = (PodSpec("dgx1-1", (0, 1)), PodSpec("dgx1-2", (0, 1)))
    gang = job(name="dist", pods=2, gpus=2.0, placement=nodes,
               environment=(("RANK", "7"), ("SEED", "1")))  # fmt: skip
    service = valid(manifests.rendezvous_service(gang))
    assert service["metadata"]["name"] == "dist"
    assert service["spec"] == {"clusterIP": "None", "publishNotReadyAddresses": True,
                               "selector": {"allot.io/project": "team-a",
                                            "allot.io/job": "dist"}}  # fmt: skip
    assert service["metadata"]["labels"]["allot.io/job"] == "dist"  # the sweep's and stop's
    pods = [valid(pod) for pod in manifests.job_pods(gang)]
    assert [(p["spec"]["hostname"], p["spec"]["subdomain"]) for p in pods] == [
        ("dist-0", "dist"), ("dist-1", "dist")]  # fmt: skip
    master = "dist-0.dist.allot-team-a.svc"
    for rank, pod in enumerate(pods):
        names = [item["name"] for item in container(pod)["env"]]
        assert len(names) == len(set(names))  # the job's RANK does not shadow Allot's
        assert env(pod) == {
            "SEED": "1", "MASTER_ADDR": master, "MASTER_PORT": "29500", "WORLD_SIZE": "2",
            "RANK": str(rank), "NODE_RANK": str(rank), "PET_NNODES": "2",
            "PET_NODE_RANK": str(rank), "PET_MASTER_ADDR": master, "PET_MASTER_PORT": "29500",
            "PET_NPROC_PER_NODE": "2",
            "ALLOT_HOSTS": f"{master},dist-1.dist.allot-team-a.svc",
        }  # fmt: skip


def test_a_gangs_own_master_port_is_kept_and_its_service_name_starts_with_a_letter():
    nodes = (PodSpec("n1", (0,)), PodSpec("n2", (0,)), PodSpec("n3", (0,)))
    gang = job(name="3d-unet", pods=3, gpus=1.0, placement=nodes, ports=(6006,),
               environment=(("MASTER_PORT", "23456"),))  # fmt: skip
    service = valid(manifests.rendezvous_service(gang))
    assert service["metadata"]["name"] == "job-3d-unet-hosts"  # 3d-unet is the ports' Service
    assert valid(manifests.service(gang))["metadata"]["name"] == "3d-unet"
    last = manifests.job_pods(gang)[2]
    assert last["spec"]["subdomain"] == "job-3d-unet-hosts"
    assert env(last)["MASTER_ADDR"] == "3d-unet-0.job-3d-unet-hosts.allot-team-a.svc"
    assert (env(last)["MASTER_PORT"], env(last)["RANK"], env(last)["WORLD_SIZE"]) == (
        "23456", "2", "3")  # fmt: skip


def test_a_single_pod_job_has_no_headless_service_hostname_or_rendezvous_variables():
    single = job(environment=(("RANK", "7"),))
    assert manifests.rendezvous_service(single) is None
    (pod,) = manifests.job_pods(single)
    assert "hostname" not in pod["spec"] and "subdomain" not in pod["spec"]
    assert env(pod) == {"RANK": "7"}  # the job's own, as before
