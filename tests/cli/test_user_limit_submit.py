"""`allot submit` past a project's per-user pending limit (issue 36): the CLI prints the API's
409 naming the field and the limit, exits 1, and nothing is stored."""

from __future__ import annotations

import pytest

from portal.jobs.models import Job
from portal.tenancy.models import Project, UserLimit
from tests.cli.test_allot_command import allot  # noqa: F401 (the fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def test_submit_past_the_pending_limit_says_which_limit_and_stores_nothing(allot):  # noqa: F811
    # the fixture's bootstrap makes team-a; a 9-GPU pod fits no node, so the first job waits
    first = allot("submit", "wide-1", "-p", "team-a", "-g", "9")
    assert first.returncode == 0, first.stderr
    UserLimit.objects.create(project=Project.objects.get(name="team-a"), max_pending=1)
    refused = allot("submit", "wide-2", "-p", "team-a", "-g", "1")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "pending: root has 1 pending jobs in team-a and asks for 1 more" in refused.stderr
    assert "(its per-user limit max_pending)" in refused.stderr
    assert not Job.objects.filter(name="wide-2").exists()
