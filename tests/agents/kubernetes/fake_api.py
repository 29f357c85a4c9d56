"""A local HTTP server that speaks the subset of the Kubernetes API the agent uses.

Nodes (list), namespaces, pods (create, get, list by label in one namespace or all, delete, delete
by label, watch, merge patch of labels and annotations), pods/binding, pods/log, services and
ingresses (create, list, delete), with the API's Status bodies and codes: 404 NotFound, 409
AlreadyExists / Conflict, 410 Gone for a watch that resumes from a compacted resourceVersion, 422
Invalid, 500 on injected faults.

Every object sent to it is validated against the official schema (`kubernetes-validate`,
strict): an invalid one is a 422 and is recorded in `invalid`, which the tests assert empty.

Faults the real control plane (tests/k8s) cannot produce on demand: `fail_binding`,
`fail_create` (500), `forbid_create` (a ResourceQuota's 403), `no_token_yet` and
`no_account_yet` (a namespace just created: the 500 "No API token found for service account" of
older servers, the 403 "error looking up service account" of newer ones, for its first N pod
creations) and `no_service_deletecollection` (405 to a delete-collection of Services, as older
servers answered). `authorizations` records the Authorization header of every request.

It plays the kubelet too: `set_pod_status` moves a pod through phases and container states, and
with `auto_run` a bound pod is Running at once. `expire_watches` ends every open watch and
compacts the history, so a watch that resumes gets 410 Gone; `go_down`/`come_up` take the whole
server off the network and back on the same port.
"""

from __future__ import annotations

import copy
import json
import re
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import kubernetes_validate

K8S_VERSION = "1.30"
INGRESSES = "/apis/networking.k8s.io/v1/namespaces/{}/ingresses"


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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        """A client that hangs up (a stopped watch) is normal; anything else is printed."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeKubernetes:
    """`FakeKubernetes().url` answers like an API server."""

    def __init__(self, auto_run: bool = False):
        self.nodes: list[dict] = []
        self.namespaces: dict[str, dict] = {}
        self.pods: dict[tuple[str, str], dict] = {}
        self.services: dict[tuple[str, str], dict] = {}
        self.ingresses: dict[tuple[str, str], dict] = {}
        self.logs: dict[tuple[str, str], list[str]] = {}
        self.invalid: list[str] = []
        self.fail_binding: set[str] = set()  # pod names whose binding answers 500
        self.fail_create: set[str] = set()  # pod names whose creation answers 500
        self.forbid_create: set[str] = set()  # pod names a ResourceQuota forbids (403)
        self.no_token_yet: dict[str, int] = {}  # namespace -> pod creations answering 500
        self.no_account_yet: dict[str, int] = {}  # namespace -> pod creations answering 403
        self.no_service_deletecollection = False  # 405 to DELETE .../services?labelSelector=
        self.authorizations: list[str] = []  # the Authorization header of each request
        self.down = False
        self.requests: list[tuple[str, str]] = []
        self.auto_run = auto_run
        self.bindings: list[tuple[str, str, str]] = []  # (namespace, pod, node), in order
        self.execs: list[tuple[str, str, list[str]]] = []  # (namespace, pod, command)
        self.resizes: list[dict] = []
        self.deleted: list[tuple[str, str]] = []  # pods deleted, in order
        self.terminating: set[str] = set()  # pod names a delete only marks (`finish_deleting`)
        self.rv = 1
        self.history: list[tuple[int, str, dict]] = []  # (resourceVersion, event type, pod)
        self.compacted_to = 0  # watches from a resourceVersion below this get 410 Gone
        self.watch_epoch = 0  # bumped by expire_watches: open watches end
        self.cond = threading.Condition()
        self.server = self._serve(0)
        self.port = self.server.server_port
        self.url = f"http://127.0.0.1:{self.port}"

    # ------------------------------------------------------------------ the server
    def _serve(self, port: int) -> ThreadingHTTPServer:
        server = _Server(("127.0.0.1", port), self._handler())
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # watches stream in chunks, as the API server's do

            def do_GET(self):
                if fake.down:  # a server going away drops even kept-alive connections
                    self.close_connection = True
                    return
                fake.requests.append(("GET", self.path))
                fake.authorizations.append(self.headers.get("Authorization", ""))
                url = urlsplit(self.path)
                if self.headers.get("Upgrade", "").lower() == "websocket":
                    return fake.exec(self, url.path, parse_qs(url.query))
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if query.get("watch", "").lower() in ("true", "1"):  # Go's ParseBool
                    return fake.watch(self, url.path, query)
                with fake.cond:
                    code, body = fake.get(url.path, query)
                if isinstance(body, str):
                    return self.text(code, body)
                return self.answer(code, body)

            def do_POST(self):
                if fake.down:  # a server going away drops even kept-alive connections
                    self.close_connection = True
                    return
                fake.requests.append(("POST", self.path))
                fake.authorizations.append(self.headers.get("Authorization", ""))
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                path = urlsplit(self.path).path
                try:
                    kubernetes_validate.validate(body, K8S_VERSION, strict=True)
                except kubernetes_validate.ValidationError as exc:
                    fake.invalid.append(f"{path}: {exc.message}")
                    return self.answer(422, status(422, "Invalid", exc.message))
                with fake.cond:
                    code, answer = fake.create(path, body)
                return self.answer(code, answer)

            def do_DELETE(self):
                if fake.down:  # a server going away drops even kept-alive connections
                    self.close_connection = True
                    return
                fake.requests.append(("DELETE", self.path))
                fake.authorizations.append(self.headers.get("Authorization", ""))
                url = urlsplit(self.path)
                with fake.cond:
                    code, answer = fake.delete(url.path, parse_qs(url.query))
                return self.answer(code, answer)

            def do_PATCH(self):
                fake.requests.append(("PATCH", self.path))
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                with fake.cond:
                    code, answer = fake.patch(urlsplit(self.path).path, body)
                return self.answer(code, answer)

            def answer(self, code: int, body: dict) -> None:
                self.send(code, json.dumps(body).encode(), "application/json")

            def text(self, code: int, body: str) -> None:
                self.send(code, body.encode(), "text/plain")

            def send(self, code: int, data: bytes, kind: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        return Handler

    @staticmethod
    def listing(kind: str, items: list[dict], rv: int = 1) -> dict:
        return {"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": str(rv)},
                "items": items}  # fmt: skip

    # ------------------------------------------------------------------ reads
    def get(self, path: str, query: dict) -> tuple[int, dict | str]:
        selector = query.get("labelSelector", "")
        if path == "/api/v1/nodes":
            return 200, self.listing("NodeList", self.nodes, self.rv)
        if path == "/api/v1/pods":
            items = [pod for pod in self.pods.values() if _matches(pod, selector)]
            return 200, self.listing("PodList", items, self.rv)
        if path == "/api/v1/services":
            items = [o for o in self.services.values() if _matches(o, selector)]
            return 200, self.listing("ServiceList", items)
        if path == "/apis/networking.k8s.io/v1/ingresses":
            items = [o for o in self.ingresses.values() if _matches(o, selector)]
            return 200, {**self.listing("IngressList", items), "apiVersion": "networking.k8s.io/v1"}
        match = re.fullmatch(r"/api/v1/namespaces/([^/]+)/services/([^/]+)", path)
        if match:
            service = self.services.get((match[1], match[2]))
            if service is None:
                return 404, status(404, "NotFound", f'services "{match[2]}" not found')
            return 200, service
        match = re.fullmatch(r"/api/v1/namespaces/([^/]+)/(pods|services)", path)
        if match:
            store = self.pods if match[2] == "pods" else self.services
            items = [o for (ns, _), o in store.items() if ns == match[1] and _matches(o, selector)]
            return 200, self.listing("PodList" if match[2] == "pods" else "ServiceList", items)
        match = re.fullmatch(r"/apis/networking.k8s.io/v1/namespaces/([^/]+)/ingresses", path)
        if match:
            items = [o for (ns, _), o in self.ingresses.items()
                     if ns == match[1] and _matches(o, selector)]  # fmt: skip
            return 200, {**self.listing("IngressList", items), "apiVersion": "networking.k8s.io/v1"}
        match = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)(/log)?", path)
        if match:
            pod = self.pods.get((match[1], match[2]))
            if pod is None:
                return 404, status(404, "NotFound", f'pods "{match[2]}" not found')
            if not match[3]:
                return 200, pod
            if pod["status"].get("phase") == "Pending":
                message = f'container "main" in pod "{match[2]}" is waiting to start'
                return 400, status(400, "BadRequest", message)
            lines = self.logs.get((match[1], match[2]), [])
            tail = int(query.get("tailLines", len(lines)))
            return 200, "".join(f"{line}\n" for line in lines[-tail:] if tail)
        return 404, status(404, "NotFound", f"{path} not found")

    def watch(self, handler, path: str, query: dict) -> None:
        """A watch stream of pod events after `resourceVersion`, one JSON object per line."""
        if path != "/api/v1/pods":
            return handler.answer(404, status(404, "NotFound", f"{path} not found"))
        selector = query.get("labelSelector", "")
        since = int(query.get("resourceVersion") or 0)
        deadline = time.monotonic() + float(query.get("timeoutSeconds", 30))
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.close_connection = True
        with self.cond:
            epoch = self.watch_epoch
        try:
            self._stream(handler, selector, since, deadline, epoch)
            handler.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            return

    def _stream(self, handler, selector: str, since: int, deadline: float, epoch: int) -> None:
        while True:
            with self.cond:
                if since < self.compacted_to:
                    gone = status(410, "Expired", f"too old resource version: {since}")
                    self._write(handler, {"type": "ERROR", "object": gone})
                    return
                events = [e for e in self.history if e[0] > since]
                if not events:
                    left = deadline - time.monotonic()
                    if left <= 0 or epoch != self.watch_epoch:
                        return
                    self.cond.wait(min(left, 0.5))
                    continue
            for rv, kind, pod in events:
                since = rv
                if _matches(pod, selector):
                    self._write(handler, {"type": kind, "object": pod})

    @staticmethod
    def _write(handler, event: dict) -> None:
        """One event as one chunk of the chunked response."""
        data = json.dumps(event).encode() + b"\n"
        handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        handler.wfile.flush()

    def exec(self, handler, path: str, query: dict) -> None:
        """pods/exec over a websocket in Kubernetes' v4 channel protocol. The "container" is a
        local process running the requested command: channel 0 feeds its stdin, its output
        comes back on channel 1 (a terminal merges stderr), and channel 3 ends with a Status."""
        from websockets.frames import Opcode
        from websockets.server import ServerProtocol

        match = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/exec", path)
        pod = self.pods.get((match[1], match[2])) if match else None
        protocol = ServerProtocol(subprotocols=["v4.channel.k8s.io"])
        head = [handler.requestline] + [f"{k}: {v}" for k, v in handler.headers.items()]
        protocol.receive_data(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        response = protocol.accept(protocol.events_received()[0])
        if pod is None or pod["status"].get("phase") != "Running":
            response = protocol.reject(404, "pod not found or not running")
        protocol.send_response(response)
        sock = handler.connection
        sock.sendall(b"".join(protocol.data_to_send()))
        handler.close_connection = True
        if response.status_code != 101:
            return
        self.execs.append((match[1], match[2], query.get("command", [])))
        process = subprocess.Popen(query.get("command", ["/bin/sh"]), stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
        lock = threading.Lock()

        def send(data: bytes) -> None:
            with lock:
                protocol.send_binary(data)
                sock.sendall(b"".join(protocol.data_to_send()))

        def pump() -> None:
            for chunk in iter(lambda: process.stdout.read1(4096), b""):
                send(b"\x01" + chunk)
            code = process.wait()
            ok = {"metadata": {}, "status": "Success"}
            cause = {"reason": "ExitCode", "message": str(code)}
            failed = {"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
                      "details": {"causes": [cause]}}  # fmt: skip
            send(b"\x03" + json.dumps(failed if code else ok).encode())
            with lock:
                protocol.send_close(1000)
                sock.sendall(b"".join(protocol.data_to_send()))

        output = threading.Thread(target=pump, daemon=True)
        output.start()
        try:
            while output.is_alive():
                sock.settimeout(0.2)
                try:
                    data = sock.recv(65536)
                except TimeoutError:
                    continue
                if not data:
                    break
                protocol.receive_data(data)
                for frame in protocol.events_received():
                    if frame.opcode in (Opcode.BINARY, Opcode.TEXT) and frame.data[:1] == b"\x00":
                        process.stdin.write(bytes(frame.data[1:]))
                        process.stdin.flush()
                    elif frame.opcode in (Opcode.BINARY, Opcode.TEXT) and frame.data[:1] == b"\x04":
                        self.resizes.append(json.loads(bytes(frame.data[1:])))
                    elif frame.opcode == Opcode.CLOSE:
                        process.kill()
        except OSError:
            process.kill()
        finally:
            output.join(timeout=2)
            if process.poll() is None:
                process.kill()

    # ------------------------------------------------------------------ writes
    def _event(self, kind: str, pod: dict) -> None:
        """Record a pod change under a new resourceVersion and wake the watches."""
        self.rv += 1
        pod["metadata"]["resourceVersion"] = str(self.rv)
        self.history.append((self.rv, kind, copy.deepcopy(pod)))
        self.cond.notify_all()

    def create(self, path: str, body: dict) -> tuple[int, dict]:
        name = body.get("metadata", {}).get("name", "")
        if path == "/api/v1/namespaces":
            if name in self.namespaces:
                return 409, status(409, "AlreadyExists", f'namespaces "{name}" already exists')
            self.namespaces[name] = body
            return 201, body
        match = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding", path)
        if match:
            return self.bind(match[1], match[2], body)
        match = re.fullmatch(r"/api/v1/namespaces/([^/]+)/(pods|services)", path) or re.fullmatch(
            r"/apis/networking.k8s.io/v1/namespaces/([^/]+)/(ingresses)", path
        )
        if not match:
            return 404, status(404, "NotFound", f"{path} not found")
        namespace, kind = match[1], match[2]
        if namespace not in self.namespaces:
            return 404, status(404, "NotFound", f'namespaces "{namespace}" not found')
        store = {"pods": self.pods, "services": self.services, "ingresses": self.ingresses}[kind]
        if (namespace, name) in store:
            return 409, status(409, "AlreadyExists", f'{kind} "{name}" already exists')
        if kind == "pods" and self.no_token_yet.get(namespace):
            self.no_token_yet[namespace] -= 1
            message = (
                'No API token found for service account "default", retry after the '
                "token is automatically created and added to the service account"
            )
            return 500, status(500, "ServerTimeout", message)
        if kind == "pods" and self.no_account_yet.get(namespace):
            self.no_account_yet[namespace] -= 1
            message = (
                f'pods "{name}" is forbidden: error looking up service account '
                f'{namespace}/default: serviceaccount "default" not found'
            )
            return 403, status(403, "Forbidden", message)
        if kind == "pods" and name in self.fail_create:
            return 500, status(500, "InternalError", "etcd is having a bad day")
        if kind == "pods" and name in self.forbid_create:
            message = (f'pods "{name}" is forbidden: exceeded quota: gpu-quota, requested: '
                       "requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=8, limited: "
                       "requests.nvidia.com/gpu=8")  # fmt: skip
            return 403, status(403, "Forbidden", message)
        obj = copy.deepcopy(body)
        obj["metadata"] = {**body["metadata"], "namespace": namespace, "uid": f"uid-{self.rv}"}
        if kind == "pods":
            obj["status"] = {"phase": "Pending"}
            store[(namespace, name)] = obj
            self._event("ADDED", obj)
        else:
            store[(namespace, name)] = obj
        return 201, obj

    def patch(self, path: str, body: dict) -> tuple[int, dict]:
        """A merge patch of a pod's labels and annotations (None removes a key)."""
        match = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)", path)
        pod = self.pods.get((match[1], match[2])) if match else None
        if pod is None:
            return 404, status(404, "NotFound", f"{path} not found")
        for field in ("labels", "annotations"):
            values = pod["metadata"].setdefault(field, {})
            for key, value in ((body.get("metadata") or {}).get(field) or {}).items():
                if value is None:
                    values.pop(key, None)
                else:
                    values[key] = value
        self._event("MODIFIED", pod)
        return 200, pod

    def bind(self, namespace: str, name: str, body: dict) -> tuple[int, dict]:
        pod = self.pods.get((namespace, name))
        if pod is None:
            return 404, status(404, "NotFound", f'pods "{name}" not found')
        if name in self.fail_binding:
            return 500, status(500, "InternalError", "etcd is having a bad day")
        if pod["spec"].get("nodeName"):
            return 409, status(409, "Conflict", f"pod {name} is already assigned")
        pod["spec"]["nodeName"] = body["target"]["name"]
        self.bindings.append((namespace, name, body["target"]["name"]))
        if self.auto_run and namespace != "allot-system":
            self._set_status(pod, "Running", running=True)
        self._event("MODIFIED", pod)
        return 201, status(201, "", "")

    def delete(self, path: str, query: dict) -> tuple[int, dict]:
        match = re.fullmatch(r"/api/v1/namespaces/([^/]+)/(pods|services)(?:/([^/]+))?", path)
        match = match or re.fullmatch(
            r"/apis/networking.k8s.io/v1/namespaces/([^/]+)/(ingresses)(?:/([^/]+))?", path
        )
        if not match:
            return 404, status(404, "NotFound", f"{path} not found")
        namespace, kind, name = match[1], match[2], match[3]
        store = {"pods": self.pods, "services": self.services, "ingresses": self.ingresses}[kind]
        if name:
            keys = [(namespace, name)] if (namespace, name) in store else []
            if not keys:
                return 404, status(404, "NotFound", f'{kind} "{name}" not found')
        elif kind == "services" and self.no_service_deletecollection:
            message = "the server does not allow this method on the requested resource"
            return 405, status(405, "MethodNotAllowed", message)
        else:
            selector = query.get("labelSelector", [""])[0]
            keys = [k for k, o in store.items() if k[0] == namespace and _matches(o, selector)]
        for key in keys:
            if kind == "pods" and key[1] in self.terminating:  # its kubelet has yet to end it
                store[key]["metadata"]["deletionTimestamp"] = "2026-11-01T00:00:00Z"
                self._event("MODIFIED", store[key])
                continue
            obj = store.pop(key)
            if kind == "pods":
                self.deleted.append(key)
                self._event("DELETED", obj)
        if name:
            return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success"}
        return 200, self.listing("List", [])

    # ------------------------------------------------------------------ the kubelet and faults
    def finish_deleting(self, namespace: str, name: str) -> None:
        """The kubelet ends a pod a delete marked terminating (`terminating`): it goes."""
        with self.cond:
            self.terminating.discard(name)
            obj = self.pods.pop((namespace, name))
            self.deleted.append((namespace, name))
            self._event("DELETED", obj)

    @staticmethod
    def _set_status(pod: dict, phase: str, *, running: bool = False, waiting: str = "",
                    terminated: str = "", exit_code: int = 0, restarts: int = 0,
                    message: str = "") -> None:  # fmt: skip
        state: dict = {}
        if running:
            state = {"running": {"startedAt": "2026-11-01T00:00:00Z"}}
        elif waiting:
            state = {"waiting": {"reason": waiting, "message": message}}
        elif terminated:
            state = {"terminated": {"reason": terminated, "exitCode": exit_code,
                                    "message": message}}  # fmt: skip
        container = {"name": "main", "ready": running, "restartCount": restarts,
                     "image": pod["spec"]["containers"][0]["image"], "imageID": "",
                     "state": state}  # fmt: skip
        pod["status"] = {"phase": phase, "containerStatuses": [container]}

    def set_pod_status(self, namespace: str, name: str, phase: str, **state) -> None:
        """Move a pod to `phase` with a container state, as its kubelet would report it."""
        with self.cond:
            pod = self.pods[(namespace, name)]
            self._set_status(pod, phase, **state)
            self._event("MODIFIED", pod)

    def expire_watches(self) -> None:
        """End every open watch and forget the history: resuming watches get 410 Gone."""
        with self.cond:
            self.compacted_to = self.rv + 1
            self.history.clear()
            self.watch_epoch += 1
            self.cond.notify_all()

    def go_down(self) -> None:
        """Take the server off the network (connections are refused)."""
        with self.cond:
            self.down = True
            self.watch_epoch += 1
            self.cond.notify_all()
        self.server.shutdown()
        self.server.server_close()

    def come_up(self) -> None:
        """Listen again on the same port."""
        for _ in range(50):
            try:
                self.server = self._serve(self.port)
                self.down = False
                return
            except OSError:
                time.sleep(0.1)
        raise OSError(f"port {self.port} stayed busy")

    def close(self) -> None:
        with self.cond:
            self.watch_epoch += 1
            self.cond.notify_all()
        self.server.shutdown()
        self.server.server_close()


class Monotonic:
    """A clock for the agent's back-off that a test moves by hand (`now += seconds`)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def refused(port: int) -> bool:
    """True when nothing listens on `port`."""
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


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
