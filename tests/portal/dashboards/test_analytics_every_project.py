"""Issue 24 item 7: analytics on a fresh install (no samples yet) shows every project the user
may see with its quota line, not an empty chart that leaves them out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def test_projects_that_ran_nothing_show_with_their_quota(api, cluster_admin, team_a, team_b):
    end = datetime.now(UTC)
    query = f"from={(end - timedelta(hours=1)).isoformat()}&to={end.isoformat()}".replace(
        "+", "%2B"
    )
    body = api(cluster_admin).get(f"/api/v1/analytics/allocation/?{query}").json()
    quotas = {p["name"]: set(p["quota"]) for p in body["projects"]}
    assert quotas == {"team-a": {float(team_a.quota)}, "team-b": {float(team_b.quota)}}
    assert all(p["idle_gpu_hours"] == 0 for p in body["projects"])


def test_a_viewer_still_sees_only_their_projects(api, viewer, team_b):
    end = datetime.now(UTC)
    query = f"from={(end - timedelta(hours=1)).isoformat()}&to={end.isoformat()}".replace(
        "+", "%2B"
    )
    body = api(viewer).get(f"/api/v1/analytics/allocation/?{query}").json()
    assert [p["name"] for p in body["projects"]] == ["team-a"]
