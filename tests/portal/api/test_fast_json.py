"""The API's JSON is encoded by orjson (issue 39) and stays byte for byte what DRF's
JSONRenderer writes: floats of every size, every character, times, decimals, and what orjson
refuses (which DRF's renderer then answers or refuses as before)."""

from __future__ import annotations

import datetime
import random
import uuid
from decimal import Decimal

import pytest
from django.conf import settings
from django.utils.translation import gettext_lazy
from rest_framework.renderers import JSONRenderer

from portal.api.renderers import FastJSONRenderer
from portal.jobs.models import Job, Status


def both(data, accepted="application/json", context=None) -> tuple[bytes, bytes]:
    return (FastJSONRenderer().render(data, accepted, context),
            JSONRenderer().render(data, accepted, context))  # fmt: skip


def test_the_api_renders_with_it():
    assert settings.REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"][0] == (
        "portal.api.renderers.FastJSONRenderer"
    )


def test_floats_of_every_size_are_spelled_as_python_spells_them():
    rng = random.Random(39)
    floats = [0.0, -0.0, 1e-4, 9.99e-5, 1e-5, 2.5e-7, 5e-324, 1e16, 1e15, 1.5e300, 0.1, 1 / 3]
    floats += [rng.uniform(-1, 1) * 10 ** rng.randint(-12, 20) for _ in range(3000)]
    floats += [
        round(rng.random() * 10 ** -rng.randint(1, 8), rng.randint(1, 10)) for _ in range(3000)
    ]
    fast, drf = both({"values": floats, "one": floats[5]})
    assert fast == drf


def test_every_character_is_escaped_as_python_escapes_it():
    texts = ["".join(map(chr, range(0, 0x80))), "é ü 漢字 🚀 \u2028 \u2029 \u00ad \ufeff",
             'quote " backslash \\ slash /', "0.00001 in a text 2e-7"]  # fmt: skip
    fast, drf = both({"texts": texts, "\u2028key": "\u2029"})
    assert fast == drf


def test_times_decimals_and_lazy_texts_go_through_drfs_encoder():
    now = datetime.datetime(2026, 11, 29, 1, 2, 3, 456789, tzinfo=datetime.UTC)
    data = {"at": now, "local": now.replace(tzinfo=None), "day": now.date(),
            "time": datetime.time(1, 2, 3), "for": datetime.timedelta(seconds=90.5),
            "gpus": Decimal("0.50"), "tiny": Decimal("0.00001"), "id": uuid.UUID(int=39),
            "label": gettext_lazy("Pending"), "nested": [(1, 2), {"a": None, "b": True}],
            "big": 2**63 - 1}  # fmt: skip
    fast, drf = both(data)
    assert fast == drf


@pytest.mark.parametrize(
    "data", [{1: "an integer key"}, {"huge": 2**70}, {"surrogate": "\ud800"}, {"set": {1}}]
)
def test_what_orjson_refuses_is_answered_as_drf_answers_it(data):
    try:
        drf = JSONRenderer().render(data)
    except Exception as refusal:
        with pytest.raises(type(refusal)):
            FastJSONRenderer().render(data)
    else:
        assert FastJSONRenderer().render(data) == drf


def test_pretty_printing_is_drfs():
    fast, drf = both({"a": [1, 2]}, "application/json; indent=4")
    assert fast == drf and b"\n" in fast
    assert both(None) == (b"", b"")


@pytest.mark.django_db
def test_the_job_list_and_a_job_are_the_bytes_drf_wrote(api, member, team_a, team_b):
    Job.objects.create(project=team_a, name="waits", gpus=Decimal("0.25"), user=member,
                       pending_reason="waits (R3)", environment={"A": "\u2028"})  # fmt: skip
    Job.objects.create(project=team_a, name="runs", gpus=2, user=member, status=Status.RUNNING,
                       started_at=datetime.datetime.now(datetime.UTC), ports=[8888],
                       placement=[{"node": "dgx1-1", "devices": [0, 1], "share": 1.0}])  # fmt: skip
    client = api(member)
    for path in ("/api/v1/jobs/?project=team-a", "/api/v1/jobs/team-a/runs/",
                 "/api/v1/jobs/team-a/waits/", "/api/v1/overview/"):  # fmt: skip
        answer = client.get(path)
        assert answer.status_code == 200
        assert answer.content == JSONRenderer().render(answer.data), path
