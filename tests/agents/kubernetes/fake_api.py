"""A local HTTP server that speaks the subset of the Kubernetes API the agent uses, with the
API's Status bodies and codes: nodes (list), namespaces and pods (create, list by label,
delete, delete by label), pods/binding. Every object sent to it is validated against the
official schema (`kubernetes-validate`, strict): an invalid one is a 422 Invalid, and the test
that sent it fails through `invalid`. `fail_binding` names pods whose binding answers 500."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import kubernetes_validate

K8S_VERSION = "1.30"


def status(code: int, reason: str, message: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}  # fmt: skip


def _matches(obj: dict, selector: str) -> bool:
    labels = obj["metadata"].get("labels") or {}
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


class FakeKubernetes:
    """`FakeKubernetes().url` answers like an API server."""

    def __init__(self):
        self.nodes: list[dict] = []
        self.namespaces: dict[str, dict] = {}
        self.pods: dict[tuple[str, str], dict] = {}
        self.invalid: list[str] = []
        self.fail_binding: set[str] = set()
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                fake.requests.append(("GET", self.path))
                url = urlsplit(self.path)
                if url.path == "/api/v1/nodes":
                    return self.answer(200, fake.listing("NodeList", fake.nodes))
                match = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods", url.path)
                if match:
                    selector = parse_qs(url.query).get("labelSelector", [""])[0]
                    items = [pod for (ns, _), pod in fake.pods.items()
                             if ns == match[1] and _matches(pod, selector)]  # fmt: skip
                    return self.answer(200, fake.listing("PodList", items))
                return self.answer(404, status(404, "NotFound", f"{url.path} not found"))

            def do_POST(self):
                fake.requests.append(("POST", self.path))
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                path = urlsplit(self.path).path
                try:
                    kubernetes_validate.validate(body, K8S_VERSION, strict=True)
                except kubernetes_validate.ValidationError as exc:
                    fake.invalid.append(f"{path}: {exc.message}")
                    return self.answer(422, status(422, "Invalid", exc.message))
                with fake.lock:
                    code, answer = fake.create(path, body)
                return self.answer(code, answer)

            def do_DELETE(self):
                fake.requests.append(("DELETE", self.path))
                url = urlsplit(self.path)
                with fake.lock:
                    code, answer = fake.delete(url.path, parse_qs(url.query))
                return self.answer(code, answer)

            def answer(self, code: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @staticmethod
    def listing(kind: str, items: list[dict]) -> dict:
        return {"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
                "items": items}  # fmt: skip

    def create(self, path: str, body: dict) -> tuple[int, dict]:
        name = body.get("metadata", {}).get("name", "")
        if path == "/api/v1/namespaces":
            if name in self.namespaces:
                return 409, status(409, "AlreadyExists", f'namespaces "{name}" already exists')
            self.namespaces[name] = body
            return 201, body
        match = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods", path)
        if match:
            namespace = match[1]
            if namespace not in self.namespaces:
                return 404, status(404, "NotFound", f'namespaces "{namespace}" not found')
            if (namespace, name) in self.pods:
                return 409, status(409, "AlreadyExists", f'pods "{name}" already exists')
            pod = {**body, "status": {"phase": "Pending"}}
            pod["metadata"] = {**body["metadata"], "namespace": namespace}
            self.pods[(namespace, name)] = pod
            return 201, pod
        match = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding", path)
        if match:
            pod = self.pods.get((match[1], match[2]))
            if pod is None:
                return 404, status(404, "NotFound", f'pods "{match[2]}" not found')
            if match[2] in self.fail_binding:
                return 500, status(500, "InternalError", "etcd is having a bad day")
            if pod["spec"].get("nodeName"):
                return 409, status(409, "Conflict", f"pod {match[2]} is already assigned")
            pod["spec"]["nodeName"] = body["target"]["name"]
            return 201, status(201, "", "")
        return 404, status(404, "NotFound", f"{path} not found")

    def delete(self, path: str, query: dict) -> tuple[int, dict]:
        match = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods(?:/([^/]+))?", path)
        if not match:
            return 404, status(404, "NotFound", f"{path} not found")
        namespace, name = match[1], match[2]
        if name:
            if self.pods.pop((namespace, name), None) is None:
                return 404, status(404, "NotFound", f'pods "{name}" not found')
            return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success"}
        selector = query.get("labelSelector", [""])[0]
        for key in [k for k, pod in self.pods.items() if k[0] == namespace
                    and _matches(pod, selector)]:  # fmt: skip
            del self.pods[key]
        return 200, self.listing("PodList", [])

    def close(self) -> None:
        self.server.shutdown()


def node(name: str, gpus: int, *, ready: bool = True, unschedulable: bool = False,
         labels: dict | None = None) -> dict:  # fmt: skip
    """A Node object as the API returns it."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"unschedulable": unschedulable},
        "status": {
            "allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": str(gpus)},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }
