"""Issue 26's resource scenarios through the REST API: the 24 files of
tests/scheduler/scenarios/ that use CPU, memory, GPU memory or failed devices (departments' CPU
and memory limits included), replayed one after another on one live portal by
scripts/replay_scenario.py (`--reset` between them), pass as they do through the core
(tests/scheduler/test_scenarios.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from portal.tenancy.services import issue_token
from scheduler.quantity import memory_bytes
from scheduler_tools.replay import main as replay_in_memory
from scheduler_tools.scenario import load_scenario

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "tests" / "scheduler" / "scenarios"
RESOURCE_KEYS = {"cpu", "memory", "gpu_memory", "failed_devices", "cpu_limit", "memory_limit",
                 "allocated_cpu", "allocated_memory", "devices", "decision_contains"}  # fmt: skip


def load_script():
    spec = importlib.util.spec_from_file_location(
        "replay_scenario", ROOT / "scripts" / "replay_scenario.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def differences_through_rest(paths, url: str, token: str, capsys) -> dict[str, list[str]]:
    """Each scenario file replayed in memory by the core and then through the REST API of the
    portal at `url` (`--reset` before each): {file: [core's printout, REST's, REST's errors]}
    for every file whose REST replay failed or printed otherwise; empty when all agree."""
    script, failed = load_script(), {}
    for path in paths:
        assert replay_in_memory([str(path)]) == 0, path
        core = capsys.readouterr().out
        status = script.main([str(path), "--url", url, "--token", token, "--reset"])
        printed = capsys.readouterr()
        if status != 0 or printed.out != core:
            failed[path.stem] = [core, printed.out, printed.err]
    return failed


def _keys(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def resource_scenarios() -> list[Path]:
    """Every scenario that uses a field of issue 26 (CPU, memory, GPU memory, failed devices).
    Budget scenarios (R20) move the scenario's clock, which a live portal cannot: they are
    replayed through the portal's cycle in tests/portal/scheduling/test_budgets.py; so do the
    reservation scenarios (R22), whose portal side is tests/portal/reservations/. Topology
    scenarios (R23) are replayed through REST by tests/portal/api/test_replay_topology.py."""
    return [
        p
        for p in sorted(SCENARIOS.glob("*.json"))
        if _keys(scenario := json.loads(p.read_text())) & RESOURCE_KEYS
        and "budgets" not in scenario
        and "reservations" not in scenario
        and "book" not in _keys(scenario)
        and "topology" not in scenario
    ]


def test_the_resource_scenarios_are_the_twenty_four_of_issue_26_and_one_of_issue_33():
    names = [p.stem for p in resource_scenarios()]
    assert len(names) == 25, names
    assert all(load_scenario(p) for p in resource_scenarios())


def test_every_resource_scenario_passes_through_rest_on_one_portal_as_through_the_core(
    live_server, cluster_admin, tmp_path, capsys
):
    token = issue_token(cluster_admin, "replay")[1]
    script, failed = load_script(), {}
    for path in resource_scenarios():
        default_policy = not json.loads(path.read_text()).get("policy")
        if not default_policy:
            path = _without_policy(script, path, live_server.url, token, tmp_path, capsys)
        assert replay_in_memory([str(path)]) in (0, 1)
        core = capsys.readouterr().out
        status = script.main([str(path), "--url", live_server.url, "--token", token, "--reset"])
        printed = capsys.readouterr()
        if default_policy and status != 0:
            failed[path.stem] = [line for line in printed.out.splitlines() if "FAIL" in line]
            failed[path.stem] += printed.err.splitlines()
        elif printed.out != core:  # the same tables, pending reasons and FAIL lines
            failed[path.stem] = ["prints other tables than the core", core, printed.out]
    assert not failed, json.dumps(failed, indent=1)


def _without_policy(script, path: Path, url: str, token: str, tmp_path: Path, capsys) -> Path:
    """The portal runs the default policy (reclaim on), so a file that sets another is refused
    with exit 2 naming it; the same file without its policy must replay through REST exactly as
    through the core under the default policy (the tables and any FAIL lines alike)."""
    assert script.main([str(path), "--url", url, "--token", token, "--reset"]) == 2
    assert "this scenario sets 'policy'" in capsys.readouterr().err
    data = json.loads(path.read_text())
    del data["policy"]
    copy = tmp_path / f"{path.stem}_default_policy.json"
    copy.write_text(json.dumps(data))
    return copy


def test_reset_leaves_the_scenario_alone_and_unset_fields_keep_the_portals_values(
    live_server, cluster_admin, tmp_path
):
    script = load_script()
    portal = script.Portal(live_server.url, issue_token(cluster_admin, "replay")[1])
    portal.require(
        "POST", "/api/v1/nodes/", {"name": "n1", "gpus": 8, "cpu": "64", "memory": "512Gi"}
    )
    portal.require("POST", "/api/v1/nodes/", {"name": "other", "gpus": 4})
    portal.require("POST", "/api/v1/projects/", {"name": "elsewhere", "quota": 1})
    portal.require("POST", "/api/v1/jobs/", {"project": "elsewhere", "name": "j", "gpus": 1})
    untracked = {"name": "untracked", "nodes": [{"name": "n1", "gpus": 8}],
                 "projects": [{"name": "team-a", "quota": 2}], "steps": []}  # fmt: skip
    path = tmp_path / "untracked.json"
    path.write_text(json.dumps(untracked))

    script.prepare(portal, load_scenario(path), clean=False)
    n1 = portal.require("GET", "/api/v1/nodes/n1/")
    assert (n1["cpu_millis"], n1["memory_mib"]) == (64000, 524288)  # not sent, so kept

    script.prepare(portal, load_scenario(path), clean=False, reset=True)
    assert [row["name"] for row in portal.all("/api/v1/nodes/")] == ["n1"]
    assert [row["name"] for row in portal.all("/api/v1/projects/")] == ["team-a"]
    assert portal.all("/api/v1/jobs/") == []
    n1 = portal.require("GET", "/api/v1/nodes/n1/")
    assert (n1["cpu_millis"], n1["memory_mib"], n1["failed_devices"]) == (None, None, [])


def test_departments_are_sent_with_their_limits_and_reset_deletes_them(live_server, cluster_admin):
    script = load_script()
    portal = script.Portal(live_server.url, issue_token(cluster_admin, "replay")[1])
    portal.require("POST", "/api/v1/departments/", {"name": "old-dept", "quota": 1})
    portal.require("POST", "/api/v1/projects/", {"name": "old", "quota": 1,
                                                 "department": "old-dept"})  # fmt: skip
    path = SCENARIOS / "r3_1_department_cpu_limit_caps_all_its_projects.json"
    script.prepare(portal, load_scenario(path), clean=False, reset=True)
    (dept,) = portal.all("/api/v1/departments/")
    assert (dept["name"], dept["cpu_limit"], dept["memory_limit"]) == ("dept-d", "8", None)
    assert dept["projects"] == ["team-p1", "team-p2"]
    projects = {row["name"]: row for row in portal.all("/api/v1/projects/")}
    assert sorted(projects) == ["team-p1", "team-p2", "team-q"]
    assert projects["team-p1"]["cpu_limit"] == "6" and projects["team-q"]["department"] is None


MEMORY_KEYS = ("memory", "gpu_memory", "memory_limit")
FORMS = {  # issue 33: every form Kubernetes takes for the same amount of bytes
    "bytes": str,
    "json-number": int,
    "exponent": lambda size: _exponent(size),
    "millibytes": lambda size: f"{size * 1000}m",
}


def _exponent(size: int) -> str:
    """`size` as Kubernetes' decimal exponent form: 50000000 -> "5e7"."""
    power = 0
    while size and size % 10 == 0:
        size, power = size // 10, power + 1
    return f"{size}e{power}"


def _in_form(value, form: str):
    """Every memory quantity of a scenario (nodes, queues, jobs) written in `form`."""
    if isinstance(value, list):
        return [_in_form(item, form) for item in value]
    if not isinstance(value, dict):
        return value
    return {
        key: FORMS[form](memory_bytes(item))
        if key in MEMORY_KEYS and isinstance(item, str | int)
        else _in_form(item, form)
        for key, item in value.items()
    }


def memory_scenarios() -> list[Path]:
    return [p for p in resource_scenarios() if _keys(json.loads(p.read_text())) & {*MEMORY_KEYS}]


@pytest.mark.parametrize("form", FORMS)
def test_every_memory_form_passes_through_rest_as_through_the_core(
    live_server, cluster_admin, tmp_path, capsys, form
):
    """The resource scenarios that ask for memory (KAI's cases ported for issue 26, and issue
    33's own), each memory quantity rewritten in one form (bytes "2000", a JSON number, "1e3",
    "500m"), print through REST exactly what the core prints for the scenario as written."""
    token = issue_token(cluster_admin, "replay")[1]
    script, failed = load_script(), {}
    assert len(memory_scenarios()) >= 14
    for path in memory_scenarios():
        data = json.loads(path.read_text())
        data.pop("policy", None)  # the portal runs the default policy (see above)
        written = tmp_path / f"{path.stem}.json"
        written.write_text(json.dumps(data))
        assert replay_in_memory([str(written)]) in (0, 1)
        core = capsys.readouterr().out.replace(str(written), "")
        copy = tmp_path / form / f"{path.stem}.json"
        copy.parent.mkdir(exist_ok=True)
        copy.write_text(json.dumps(_in_form(data, form)))
        script.main([str(copy), "--url", live_server.url, "--token", token, "--reset"])
        printed = capsys.readouterr()
        if printed.out.replace(str(copy), "") != core:
            failed[path.stem] = [core, printed.out, printed.err]
    assert not failed, json.dumps(failed, indent=1)
