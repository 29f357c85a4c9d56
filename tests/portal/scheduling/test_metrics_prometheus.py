"""A real Prometheus (Debian's package) scrapes the live portal's /metrics with its bearer token;
PromQL answers what the overview and `GET /api/v1/scheduler/cycles/` say.

The cycles run in this process as a worker does; they add their totals to the cache and the
portal's web tier exposes them (portal.scheduling.cycle_metrics), so one target carries every
worker's cycles.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from urllib.parse import urlsplit

import pytest

from agents.ports import free_port
from portal.dashboards.overview import build_full_overview
from portal.scheduling import cycle_metrics

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
TOKEN = "prometheus-test-token-0123456789"


@pytest.fixture
def prometheus(live_server, settings, tmp_path):
    """Prometheus scraping the live portal every second; yields a PromQL query function."""
    binary = shutil.which("prometheus") or "/usr/bin/prometheus"
    assert shutil.which(binary), "the prometheus binary is missing: apt-get install prometheus"
    settings.ALLOT_METRICS_TOKEN = TOKEN
    target = urlsplit(live_server.url).netloc
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        "  - job_name: allot\n"
        "    metrics_path: /metrics\n"
        f"    authorization: {{type: Bearer, credentials: {TOKEN}}}\n"
        f"    static_configs: [{{targets: ['{target}']}}]\n"
    )
    port = free_port()
    log = (tmp_path / "prometheus.log").open("w")
    process = subprocess.Popen(
        [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip

    def query(expr: str) -> list[dict]:
        url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=5) as response:
            answer = json.load(response)
        assert answer["status"] == "success", answer
        return answer["data"]["result"]

    try:
        yield query
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def _await(query, expr: str, check, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = query(expr)
        except OSError:  # Prometheus still starting
            last = None
        if last and check(last):
            return last
        time.sleep(0.5)
    raise AssertionError(f"{expr} never satisfied the check: last answer {last}")


def test_promql_gives_the_overviews_gpus_and_the_cycles_p95(cluster, prometheus, api):
    cluster.node("n1", 8)
    cluster.project("team-a", 4)
    cluster.project("team-b", 4)
    cluster.submit("team-a", "train-1", gpus=3)
    cluster.submit("team-b", "train-2", gpus=2)
    for _ in range(5):
        cluster.cycle()
    allocated = {row["name"]: row["allocated_gpus"] for row in build_full_overview()["projects"]}
    assert allocated == {"team-a": 3.0, "team-b": 2.0}
    result = _await(
        prometheus,
        'sum(allot_project_allocated_gpus{project="team-a"})',
        lambda result: float(result[0]["value"][1]) == allocated["team-a"],
    )
    assert float(result[0]["value"][1]) == 3.0

    from django.contrib.auth import get_user_model

    admin = get_user_model().objects.create_user("root", password="x", is_staff=True)
    cycles = api(admin).get("/api/v1/scheduler/cycles/").json()
    p95 = cycles["stages"]["lock_s"]["p95_s"]
    done = cycle_metrics.summary()["cycles"]
    expr = (
        "histogram_quantile(0.95, sum by (le) "
        '(allot_cycle_stage_duration_seconds_bucket{stage="lock"}))'
    )
    _await(
        prometheus,
        'allot_cycle_stage_duration_seconds_count{stage="lock"}',
        lambda result: float(result[0]["value"][1]) == done,
    )
    quantile = float(prometheus(expr)[0]["value"][1])
    # A histogram knows its buckets, not each cycle: both p95s lie in the same bucket.
    bounds = (0.0, *cycle_metrics.BUCKETS)
    bucket = next(i for i, bound in enumerate(bounds[1:], 1) if p95 <= bound)
    assert bounds[bucket - 1] <= quantile <= bounds[bucket], (p95, quantile)
