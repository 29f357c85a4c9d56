"""The audit CSV answers under a real ASGI server (issue 32 item 6): `acsv_lines` iterated
`values_list().aiterator()`, which ran the query on the event loop; under uvicorn (production's
web workers, `make run`'s daphne alike) it raised SynchronousOnlyOperation and the answer hung
with no byte. Browser tests had hidden it by setting DJANGO_ALLOW_ASYNC_UNSAFE, which no server
here is given."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import time
import urllib.request

import pytest

from agents.ports import free_port
from portal.audit.queries import CHUNK
from tests.paths import ROOT

pytestmark = pytest.mark.slow
ROWS = CHUNK + 500  # more than one chunk


def _csv_through_uvicorn(env: dict, token: str) -> list[list[str]]:
    port = free_port()
    env = {k: v for k, v in env.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "portal.asgi:application", "--host", "127.0.0.1",
         "--port", str(port), "--no-access-log"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz/", timeout=2)
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "no uvicorn"
                time.sleep(0.2)
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/v1/audit/?format=csv",
            headers={"Authorization": f"Token {token}"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:  # hung before: no byte
            assert answer.status == 200
            return list(csv.reader(io.StringIO(answer.read().decode())))
    finally:
        server.terminate()
        server.wait(10)


@pytest.mark.django_db(transaction=True)
def test_the_audit_csv_streams_whole_under_uvicorn_on_postgresql(cluster_admin):
    from portal.audit.models import AuditEntry
    from portal.audit.services import new_entry
    from portal.tenancy.services import issue_token
    from tests.portal.scheduling.test_concurrency import _test_database_url

    AuditEntry.objects.bulk_create(
        [new_entry("node.changed", ("node", str(i), f"n{i}")) for i in range(ROWS)]
    )
    token = issue_token(cluster_admin, "csv")[1]
    env = {**os.environ, "DATABASE_URL": _test_database_url(), "PYTHONPATH": str(ROOT),
           "ALLOT_EMBEDDED_CYCLE": "0"}  # fmt: skip
    env.pop("REDIS_URL", None)
    rows = _csv_through_uvicorn(env, token)
    assert len(rows) == 1 + AuditEntry.objects.count()  # the header and every entry


SEED = f"""
from django.contrib.auth import get_user_model
from portal.audit.models import AuditEntry
from portal.audit.services import new_entry
from portal.tenancy.services import issue_token
admin = get_user_model().objects.create_user("root", is_staff=True, is_superuser=True)
AuditEntry.objects.bulk_create(
    [new_entry("node.changed", ("node", str(i), f"n{{i}}")) for i in range({ROWS})])
print("TOKEN", issue_token(admin, "csv")[1], AuditEntry.objects.count())
"""


def test_the_audit_csv_streams_whole_under_uvicorn_on_the_embedded_sqlite(tmp_path):
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'allot.sqlite3'}",
           "PYTHONPATH": str(ROOT), "ALLOT_EMBEDDED_CYCLE": "0"}  # fmt: skip
    env.pop("REDIS_URL", None)
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, timeout=300,
                   capture_output=True)  # fmt: skip
    out = subprocess.run([*manage, "shell", "-c", SEED], env=env, check=True, timeout=120,
                         capture_output=True, text=True).stdout  # fmt: skip
    token, count = out.split("TOKEN", 1)[1].split()
    rows = _csv_through_uvicorn(env, token)
    assert len(rows) == 1 + int(count)
