"""A local HTTP server that speaks the subset of the Kubernetes API the agent uses, with the
API's Status bodies and codes. So far: nodes (list). Every object it stores is validated against
the official schema (422 Invalid otherwise)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def status(code: int, reason: str, message: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}  # fmt: skip


class FakeKubernetes:
    """`FakeKubernetes().url` answers like an API server; `nodes` is its node list."""

    def __init__(self):
        self.nodes: list[dict] = []
        self.requests: list[tuple[str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                fake.requests.append(("GET", self.path))
                if self.path.split("?")[0] == "/api/v1/nodes":
                    body = {"kind": "NodeList", "apiVersion": "v1",
                            "metadata": {"resourceVersion": "1"}, "items": fake.nodes}  # fmt: skip
                    return self.answer(200, body)
                return self.answer(404, status(404, "NotFound", f"{self.path} not found"))

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
