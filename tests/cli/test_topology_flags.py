"""`allot submit --topology-required LEVEL / --topology-preferred LEVEL` (issue 38) against a
live portal: the constraint reaches the job, `allot get` shows it, and a level no node pool has
is refused in the API's words."""

from __future__ import annotations

import pytest

from portal.cluster.models import PoolTopology
from portal.jobs.models import Job
from tests.cli.test_allot_command import allot  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def test_r23_2_the_flags_reach_the_job_and_allot_get_shows_them(allot):  # noqa: F811
    PoolTopology.objects.create(pool="default", levels=["example.com/block", "example.com/rack"])
    done = allot("submit", "ddp", "-p", "team-a", "--pods", "2", "--topology-required", "block",
                 "--topology-preferred", "rack")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert Job.objects.get(name="ddp").topology == {"required": "block", "preferred": "rack"}
    got = allot("get", "ddp", "-p", "team-a")
    assert "TOPOLOGY: required block, preferred rack; landed in -" in got.stdout, got.stdout
    refused = allot("submit", "far", "-p", "team-a", "--topology-required", "zone")
    assert refused.returncode != 0
    assert "'zone' is not a topology level of any node pool" in refused.stderr
    assert not Job.objects.filter(name="far").exists()
