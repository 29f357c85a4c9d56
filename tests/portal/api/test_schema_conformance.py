"""Every answer of the API is one its OpenAPI schema documents (issue 22 item 9).

Schemathesis runs over the whole schema with all its checks (no 5xx, status codes, content
types, headers and bodies that conform to the schema, ...) against a live portal on PostgreSQL
with the TR-4858 cluster in place, once as a cluster admin and once as a researcher of one
project. Both runs are bounded: a few examples per operation, one worker, a fixed seed.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from portal.tenancy.models import Project
from portal.tenancy.services import issue_token
from tests.conftest import _user
from tests.paths import ROOT

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

ARTIFACTS = Path(os.environ.get("ALLOT_TEST_ARTIFACTS", ROOT / "var" / "test-artifacts"))
# Left out (issue 22 item 9 asks for the conformance of the answers): whether the API rejects
# every input its schema rules out (negative_data_rejection) and takes every input the schema
# allows (positive_data_acceptance). DRF reads leniently (0 and "true" as booleans, an invalid
# page_size as the default) and the serializers check what a schema cannot say (a user that
# exists, Django's password rules, no NUL in any key): both need stricter serializers, not
# schema documents.
EXCLUDED_CHECKS = "negative_data_rejection,positive_data_acceptance"
EXCLUDED = [
    # revoking its own token would make every later operation a 401 (by the login path, or by
    # an id the fuzzer may well guess: ids are small numbers)
    "v1_auth_token_destroy",
    "v1_auth_tokens_destroy",
    "v1_users_tokens_destroy",
]


def _schemathesis(url: str, token: str) -> subprocess.CompletedProcess:
    schemathesis = Path(sys.executable).parent / "schemathesis"
    exclusions = [arg for operation in EXCLUDED for arg in ("--exclude-operation-id", operation)]
    return subprocess.run(
        [str(schemathesis), "run", f"{url}/api/schema/", "-H", f"Authorization: Token {token}",
         "--checks", "all", "--exclude-checks", EXCLUDED_CHECKS,
         "--max-examples", "10", "--workers", "1", "--seed", "4858",
         "--no-color", *exclusions],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip


def _persona(role: str):
    """A cluster admin, or a researcher of the bootstrapped team-a."""
    if role == "admin":
        return _user("root", staff=True)
    return _user("bob", project=Project.objects.get(name="team-a"), role="researcher")


@pytest.mark.parametrize("role", ["admin", "researcher"])
def test_every_answer_conforms_to_the_schema(live_server, role):
    call_command("bootstrap", verbosity=0)
    user = _persona(role)
    result = _schemathesis(live_server.url, issue_token(user, "test")[1])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"schemathesis-{role}.txt").write_text(result.stdout)  # every failure, whole
    summary = result.stdout[-6000:]
    assert result.returncode == 0, summary
    assert "Failures:" not in summary.split("SUMMARY")[-1], summary
    assert re.search(r"(\d+) generated, \1 passed", summary), summary  # every case passed
