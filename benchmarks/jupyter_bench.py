"""Issue 24 item 1: from the "Launch Jupyter" click to a JupyterLab where a cell runs, in Chromium,
through the portal as `make run` serves it (the embedded default: runserver, SQLite, the cycle and
the simulated agent inside, a real local JupyterLab per session).

Each run is a first visit: a new browser context (empty cache), and the admin's workspace in
team-a deleted, so JupyterLab restores nothing. One run:

    click "Launch Jupyter" -> the POST answered (the next page shown)
    -> (the job page's "Open Jupyter", when the launch leads there) -> the waiting page
    -> the lab's HTML (JupyterLab's page, status 200) -> its front end up (the launcher's
    Notebook card) -> a notebook open, `print(6*7)` typed and run as soon as the editor takes
    it (the kernel's first message over its websocket is timed) -> 42 shown.

Beside the browser a probe thread asks every 50 ms when the job first says `Running` (REST, the
admin's token) and when the lab first answers (`/api/status` through the portal's proxy, with the
browser's session cookie), both timed from the click. Every phase is printed per run, then the
median and p90 of each, then one JSON line. `--profile DIR` keeps a HAR (the network waterfall)
and a Playwright trace of each run and prints where the lab's requests went.

    .venv/bin/python benchmarks/jupyter_bench.py [--runs 10] [--profile var/jupyter-profile]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from playwright.sync_api import TimeoutError as PlaywrightTimeout

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
PROJECT, ADMIN, PASSWORD = "team-a", "admin", "bench-admin-password-1"
PHASES = (
    "post",
    "spawned",
    "lab_answers",
    "running",
    "lab_html",
    "lab_ui",
    "kernel",
    "cell_output",
)
WORDS = {
    "post": "POST answered (next page shown)",
    "spawned": "the Jupyter server process started",
    "lab_answers": "the lab answers /api/status through the proxy",
    "running": "the job says Running (REST)",
    "lab_html": "JupyterLab's page served (200) after the waiting page",
    "lab_ui": "JupyterLab's front end up (launcher shown)",
    "kernel": "a notebook open, its kernel's first message",
    "cell_output": "print(6*7) shows 42: usable",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def session_python(scratch: Path) -> str:
    """A Python with JupyterLab that sessions' users may run: this one, unless the portal runs
    as root and this one sits where other users cannot reach (then a venv of the system's Python
    over this one's packages, as tests/conftest.py's fixture does)."""
    from agents.sessions import _unreachable

    if os.geteuid() != 0 or _unreachable(Path(sys.executable), executable=True) is None:
        return sys.executable
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    base = shutil.which(f"python{version}", path="/usr/local/bin:/usr/bin")
    if base is None:
        sys.exit(f"no Python {version} that a session's user may run")
    venv = scratch / "session-python"
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
    packages = sysconfig.get_paths()["purelib"]
    (venv / "lib" / f"python{version}" / "site-packages" / "allot-venv.pth").write_text(
        f"import site; site.addsitedir({packages!r})\n"
    )
    return str(venv / "bin" / "python")


class Portal:
    """`make run` in a scratch directory: migrate, collectstatic, bootstrap, then runserver."""

    def __init__(self, scratch: Path, port: int, env: dict[str, str]):
        self.scratch, self.port = scratch, port
        self.url = f"http://127.0.0.1:{port}"
        self.env = (
            dict(
                os.environ,
                DEBUG="0",
                ALLOWED_HOSTS="127.0.0.1,localhost",
                ALLOT_SESSIONS_ORIGIN=f"http://*.localhost:{port}",  # as `make run` serves them
                ALLOT_PORTAL_URL=self.url,
                SECURE_SSL_REDIRECT="0",
                SESSION_COOKIE_SECURE="0",
                CSRF_COOKIE_SECURE="0",
                SECURE_HSTS_SECONDS="0",
                SECRET_KEY="jupyter-bench-" + "k" * 40,
                ALLOT_SESSIONS_SINGLE_USER="1",
                DATABASE_URL=f"sqlite:///{scratch / 'allot.sqlite3'}",
                STATIC_ROOT=str(scratch / "static"),
                ALLOT_SESSIONS_DIR=str(scratch / "sessions"),
                ALLOT_SESSIONS_PYTHON=session_python(scratch),
                ALLOT_ADMIN_PASSWORD=PASSWORD,
                PYTHONPATH=str(ROOT),
            )
            | env
        )
        self.env.pop("REDIS_URL", None)
        self.log = scratch / "portal.log"
        self.process: subprocess.Popen | None = None

    def manage(self, *args: str) -> None:
        subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            check=True,
            stdout=subprocess.DEVNULL,
        )

    def start(self) -> None:
        self.manage("migrate", "--noinput", "--verbosity", "0")
        self.manage("collectstatic", "--noinput", "--verbosity", "0")
        self.manage("bootstrap", "--url", self.url + "/")
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{self.port}"],
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(self.url + "/healthz/", timeout=2)
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"the portal did not start:\n{self.log.read_text()[-3000:]}")
                time.sleep(0.2)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def call(self, method: str, path: str, token: str = "", body: dict | None = None):
        request = urllib.request.Request(
            self.url + path, method=method, data=json.dumps(body).encode() if body else None
        )
        request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Token {token}")
        with urllib.request.urlopen(request, timeout=30) as answer:
            raw = answer.read()
            return json.loads(raw) if raw else None


class Probe(threading.Thread):
    """Asks every `every_s` when the job's server was started, when the job first says Running
    and when its lab first answers."""

    def __init__(self, portal: Portal, token: str, cookie: str, t0: float, every_s: float = 0.05):
        super().__init__(daemon=True)
        self.portal, self.token, self.cookie, self.t0 = portal, token, cookie, t0
        self.every_s, self.name_of_job = every_s, None
        self.seen: dict[str, float] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set() and len(self.seen) < 3:
            name = self.name_of_job
            if name is not None:
                self._ask(name)
            time.sleep(self.every_s)

    def _ask(self, name: str) -> None:
        if "spawned" not in self.seen:  # the session's description: its server was started
            from agents.sessions import LocalSessions

            if LocalSessions(self.portal.scratch / "sessions").get(PROJECT, name) is not None:
                self.seen["spawned"] = time.monotonic() - self.t0
        if "running" not in self.seen:
            try:
                job = self.portal.call("GET", f"/api/v1/jobs/{PROJECT}/{name}/", self.token)
                if job["status"] == "Running":
                    self.seen["running"] = time.monotonic() - self.t0
            except (OSError, ValueError, KeyError):
                pass
        if "lab_answers" not in self.seen:
            request = urllib.request.Request(  # the job page's own question: does the lab answer?
                f"{self.portal.url}/jobs/{PROJECT}/{name}/session/",
                headers={"Cookie": self.cookie},
            )
            try:
                with urllib.request.urlopen(request, timeout=5) as answer:
                    if answer.status == 200 and json.load(answer).get("answering"):
                        self.seen["lab_answers"] = time.monotonic() - self.t0
            except (OSError, ValueError):
                pass


def sign_in(page, portal: Portal) -> None:
    page.goto(portal.url + "/login/")
    page.get_by_label("Username").fill(ADMIN)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(portal.url + "/")


def one_run(browser, portal: Portal, token: str, number: int, profile: Path | None) -> dict:
    """One launch, timed from the click; the phases in seconds, and the console's errors."""
    options = {"viewport": {"width": 1400, "height": 1000}}
    if profile is not None:
        options["record_har_path"] = str(profile / f"run-{number}.har")
    context = browser.new_context(**options)
    if profile is not None:
        context.tracing.start(screenshots=True, snapshots=False)
    page = context.new_page()
    page.set_default_timeout(120_000)
    cdp = context.new_cdp_session(page) if profile is not None else None
    renderer: dict[str, float] = {}
    if cdp is not None:  # the renderer's own time: scripts, layout, tasks
        cdp.send("Performance.enable")
    sign_in(page, portal)
    cookie = "; ".join(f"{c['name']}={c['value']}" for c in context.cookies())
    page.goto(portal.url + "/jupyter/new/")
    page.get_by_label("Project").select_option(PROJECT)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    documents: list[tuple[float, int, str]] = []
    t0 = time.monotonic()
    page.on(
        "response",
        lambda r: (
            documents.append((time.monotonic() - t0, r.status, r.url))
            if r.request.resource_type == "document"
            else None
        ),
    )
    probe = Probe(portal, token, cookie, t0)
    probe.start()
    seen: dict[str, float] = {}

    def kernel_socket(socket) -> None:  # the notebook's kernel: its first message back
        if "/channels" in socket.url:
            socket.on("framereceived", lambda _: seen.setdefault("kernel", time.monotonic() - t0))

    page.on("websocket", kernel_socket)
    page.get_by_role("button", name="Launch Jupyter").click()
    page.wait_for_url(lambda url: "/jupyter/new/" not in url)
    page.wait_for_load_state("domcontentloaded")
    seen["post"] = time.monotonic() - t0
    name = _job_name(page.url)
    probe.name_of_job = name
    if "/sessions/" not in page.url and not page.locator("#session-steps[data-open]").count():
        page.locator("#open-session").click()  # a job page that does not open the lab itself
    page.locator("#jupyter-config-data").wait_for(state="attached")
    seen["lab_html"] = time.monotonic() - t0
    waiting_errors = list(errors)  # those logged before the lab's page: the waiting's
    page.locator('.jp-LauncherCard[data-category="Notebook"]').first.wait_for()
    seen["lab_ui"] = time.monotonic() - t0
    page.locator('.jp-LauncherCard[data-category="Notebook"]').first.click()
    notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    notebook.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(
        state="attached"
    )
    page.wait_for_function("() => true")  # (lets the websocket handlers above run)
    while "kernel" not in seen:
        page.wait_for_timeout(20)
    notebook.locator(".jp-Cell .cm-content").first.click()
    page.keyboard.type("print(6*7)")
    output = notebook.locator(".jp-OutputArea-output").first.filter(has_text="42")
    for _attempt in range(5):  # JupyterLab may still swap in the notebook's kernel: run again
        notebook.locator(".jp-Cell").first.click()
        page.keyboard.press("Shift+Enter")
        try:
            output.wait_for(timeout=10_000)
            break
        except PlaywrightTimeout:
            seen["retries"] = seen.get("retries", 0) + 1
    output.wait_for()
    seen["cell_output"] = time.monotonic() - t0
    probe.done.set()
    probe.join(5)
    seen |= probe.seen
    if cdp is not None:
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        renderer = {
            k: round(metrics[k], 2)
            for k in ("ScriptDuration", "TaskDuration", "LayoutDuration", "RecalcStyleDuration")
        }
    if profile is not None:
        page.screenshot(path=profile / f"run-{number}.png")
        context.tracing.stop(path=profile / f"run-{number}-trace.zip")
    context.close()
    _clean_up(portal, token, name)
    return {
        "phases": seen,
        "renderer_s": renderer,
        "job": name,
        "console_errors": errors,
        "waiting_page_errors": waiting_errors,
        "documents": documents,
    }


def _job_name(url: str) -> str:
    """The job's name in /jobs/team-a/NAME/ or /sessions/team-a/NAME/..."""
    parts = url.split("/")
    return parts[parts.index(PROJECT) + 1]


def _clean_up(portal: Portal, token: str, name: str) -> None:
    """Delete the job, wait for its server to go, then delete the workspace (a first visit next)."""
    portal.call("DELETE", f"/api/v1/jobs/{PROJECT}/{name}/", token)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            portal.call("DELETE", f"/api/v1/workspaces/{PROJECT}/{ADMIN}/", token)
            return
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return
            time.sleep(0.3)  # 409 while the session still stops


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered) + 0.5) - 1))]


def summarize(runs: list[dict]) -> dict:
    summary = {}
    for phase in PHASES:
        values = [run["phases"][phase] for run in runs if phase in run["phases"]]
        if values:
            summary[phase] = {
                "median_s": round(statistics.median(values), 2),
                "p90_s": round(percentile(values, 0.9), 2),
                "min_s": round(min(values), 2),
                "max_s": round(max(values), 2),
            }
    return summary


def har_summary(path: Path) -> dict:
    """Where the lab's requests went: how many, how many bytes, and the slowest."""
    entries = json.loads(path.read_text())["log"]["entries"]
    lab = [e for e in entries if "/sessions/" in e["request"]["url"]]
    slow = sorted(lab, key=lambda e: e["time"], reverse=True)[:8]
    return {
        "requests": len(lab),
        "bytes": sum(max(0, e["response"].get("bodySize", 0)) for e in lab),
        "sum_of_times_s": round(sum(e["time"] for e in lab) / 1000, 2),
        "waiting_page_polls": sum(1 for e in lab if e["request"]["method"] == "HEAD"),
        "uncached_static": sum(
            1 for e in lab if "/static/" in e["request"]["url"] and e["response"]["status"] == 200
        ),
        "slowest": [
            (round(e["time"]), e["request"]["url"].split("/sessions/")[1][-70:]) for e in slow
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--profile", type=Path, help="keep each run's HAR and trace here")
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting for the portal (e.g. ALLOT_SIM_START_DELAY_S=0)",
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from playwright.sync_api import sync_playwright

    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="allot-jupyter-bench-"))
    scratch.chmod(0o755)
    extra = dict(item.split("=", 1) for item in args.env)
    portal = Portal(scratch, free_port(), extra)
    load = os.getloadavg()
    runs: list[dict] = []
    try:
        portal.start()
        token = portal.call(
            "POST", "/api/v1/auth/token/", body={"username": ADMIN, "password": PASSWORD}
        )["token"]
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            for number in range(1, args.runs + 1):
                run = one_run(browser, portal, token, number, args.profile)
                runs.append(run)
                phases = "  ".join(
                    f"{k} {v:.2f}"
                    for k, v in sorted(run["phases"].items(), key=lambda kv: kv[1])
                    if k != "retries"
                )
                print(
                    f"run {number}: {phases}  console errors {len(run['console_errors'])} "
                    f"(waiting: {len(run['waiting_page_errors'])})",
                    flush=True,
                )
                if args.profile is not None:
                    har = har_summary(args.profile / f"run-{number}.har")
                    print(f"  network: {json.dumps(har)}", flush=True)
                    print(f"  renderer: {json.dumps(run['renderer_s'])}", flush=True)
                    for error in run["console_errors"]:
                        print(f"  console error: {error[:200]}", flush=True)
            browser.close()
    finally:
        portal.stop()
        from agents.sessions import LocalSessions

        sessions = LocalSessions(scratch / "sessions")
        for session in sessions.all():
            sessions.stop(session.project, session.name)
        shutil.rmtree(scratch, ignore_errors=True)
    summary = summarize(runs)
    print(
        f"\n{len(runs)} runs, load average before {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
        f"after {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    for phase, figures in summary.items():
        print(
            f"  {WORDS[phase]:<52} median {figures['median_s']:6.2f} s  "
            f"p90 {figures['p90_s']:6.2f} s"
        )
    errors = sum(len(run["console_errors"]) for run in runs)
    print(
        json.dumps(
            {
                "benchmark": "jupyter",
                "runs": len(runs),
                "phases": summary,
                "console_errors": errors,
                "waiting_page_console_errors": sum(len(r["waiting_page_errors"]) for r in runs),
                "load_before": load[0],
                "load_after": os.getloadavg()[0],
            }
        )
    )


if __name__ == "__main__":
    main()
