"""`/api/v1/scheduler/clock/`: the replay clock of a scratch portal (`portal.core.clock`).

With `ALLOT_REPLAY_CLOCK` off (every real portal) the resource does not exist: a 404 for a
cluster admin (others are refused first, as on every resource: 401, 403). On, a cluster admin
(`portal.access.may_set_clock`) reads it and sets it forward: `{"now": "2026-12-01T00:00:00Z"}`
or `{"advance_seconds": 3600}`; an earlier time is a 400 saying the clock never moves backwards.
The scheduling cycle, budgets, runs and reservations
then read that time (`scripts/replay_scenario.py` sets it before each step of a scenario).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from portal import access
from portal.api.fields import StrictSerializer
from portal.core import clock
from portal.scheduling.clock import Backwards, set_clock, stored

MAX_ADVANCE_S = 10 * 366 * 24 * 3600  # ten years at once: more is a typo


class ClockSerializer(StrictSerializer):
    """The replay clock: its reading, and whether it was set (unset, it reads the wall clock)."""

    now = serializers.DateTimeField(
        required=False, help_text="set the clock to this time (ISO 8601, with its zone)"
    )
    advance_seconds = serializers.FloatField(
        required=False, min_value=0, max_value=MAX_ADVANCE_S, write_only=True,
        help_text="move the clock this many seconds ahead of its reading",
    )  # fmt: skip
    set = serializers.BooleanField(
        read_only=True, help_text="false: never set, the clock reads the wall clock"
    )

    def validate(self, attrs: dict) -> dict:
        if ("now" in attrs) == ("advance_seconds" in attrs):
            raise serializers.ValidationError({"now": ["give either now or advance_seconds"]})
        return attrs

    def to_internal_value(self, data):
        """A negative advance is refused for what it is, before the bound's generic words."""
        if isinstance(data, dict) and isinstance(data.get("advance_seconds"), int | float):
            if not isinstance(data["advance_seconds"], bool) and data["advance_seconds"] < 0:
                raise serializers.ValidationError(
                    {"advance_seconds": ["the clock never moves backwards"]}
                )
        return super().to_internal_value(data)


class MaySetClock(BasePermission):
    message = "Only cluster admins may read or set the replay clock."

    def has_permission(self, request, view) -> bool:
        return access.may_set_clock(request.user)


NOT_FOUND = OpenApiResponse(description="the replay clock is off (ALLOT_REPLAY_CLOCK unset)")


class SchedulerClock(APIView):
    """GET: the replay clock's reading. POST `{"now": ...}` or `{"advance_seconds": N}`: set it
    forward (never back) and return the new reading. A 404 when the replay clock is off."""

    permission_classes = [IsAuthenticated, MaySetClock]

    def initial(self, request, *args, **kwargs):
        # who may ask is checked first, as on every resource (no credentials: a 401; not a
        # cluster admin: a 403); off, the resource then does not exist for a cluster admin
        # either; a method it never has stays a 405
        super().initial(request, *args, **kwargs)
        if not clock.replaying() and request.method in ("GET", "HEAD", "POST"):
            raise NotFound("the replay clock is off on this portal (ALLOT_REPLAY_CLOCK)")

    @extend_schema(responses={200: ClockSerializer, 404: NOT_FOUND})
    def get(self, request) -> Response:
        return Response(_reading())

    @extend_schema(
        request=ClockSerializer, responses={200: ClockSerializer, 400: None, 404: NOT_FOUND}
    )
    def post(self, request) -> Response:
        given = ClockSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        try:
            set_clock(**given.validated_data)
        except Backwards as exc:
            raise serializers.ValidationError({exc.field: [exc.reason]}) from None
        return Response(_reading())


def _reading() -> dict:
    return ClockSerializer({"now": clock.now(), "set": stored() is not None}).data
