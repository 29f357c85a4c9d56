"""deploy/grafana/allot.json is a Grafana dashboard whose queries name only exported metrics."""

from __future__ import annotations

import json
import re

import pytest

from tests.paths import ROOT

DASHBOARD = ROOT / "deploy" / "grafana" / "allot.json"
NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
            "unless", "offset", "inf", "nan"}  # fmt: skip
SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "counter": ("_total",), "gauge": ("",)}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: identifiers that are not functions,
    keywords, label names (in `{...}` or `by (...)`), strings or durations."""
    expr = re.sub(r'"(?:\\.|[^"\\])*"', "", expr)  # strings
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges and subqueries
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    names = set()
    for match in NAME.finditer(expr):
        rest = expr[match.end() :].lstrip()
        if rest.startswith("(") or match.group().lower() in KEYWORDS:
            continue  # a function call or an operator
        if match.start() and (expr[match.start() - 1].isdigit() or expr[match.start() - 1] == "."):
            continue  # the exponent or unit of a number
        names.add(match.group())
    return names


def test_the_parser_finds_metric_names_only():
    expr = (
        'histogram_quantile(0.95, sum by (le, stage) (rate(a_seconds_bucket{stage="plan"}[5m])))'
        " / on (stage) group_left b_total offset 1h > bool 1e3"
    )
    assert metric_names(expr) == {"a_seconds_bucket", "b_total"}


@pytest.mark.django_db
def test_the_dashboard_is_grafana_json_over_exported_metrics_only():
    from portal.web.metrics import registry

    dashboard = json.loads(DASHBOARD.read_text())
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36
    assert dashboard["title"] and dashboard["uid"]
    exported = {
        family.name + suffix for family in registry().collect() for suffix in SUFFIXES[family.type]
    }
    assert "allot_cycle_stage_duration_seconds_bucket" in exported
    used: set[str] = set()
    for panel in dashboard["panels"]:
        assert panel["type"] and panel["title"] and panel["gridPos"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            names = metric_names(target["expr"])
            assert names, (panel["title"], target["expr"])
            assert names <= exported, (panel["title"], names - exported)
            used |= names
    # the panels: the overview over time, cycle latency, pending by project, evictions
    assert {"allot_project_allocated_gpus", "allot_cycle_stage_duration_seconds_bucket",
            "allot_project_pending_jobs", "allot_evictions_total"} <= used  # fmt: skip
    # and the rest of the metrics: start latency, the agent's API errors and back-offs
    assert {"allot_job_start_latency_seconds_bucket", "allot_agent_api_errors_total",
            "allot_agent_backoff_seconds_total", "allot_agent_backoffs_total"} <= used  # fmt: skip
    # budgets (issue 36): their use in the open window and when they run out
    assert {"allot_budget_used_gpu_seconds", "allot_budget_gpu_seconds",
            "allot_budget_runs_out_timestamp_seconds"} <= used  # fmt: skip
    by_pool = [
        t["expr"] for p in dashboard["panels"] for t in p["targets"] if "node_pool" in t["expr"]
    ]
    assert by_pool, "no panel splits by node pool"
