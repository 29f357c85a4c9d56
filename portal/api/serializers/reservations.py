"""Reservations over the REST API (issue 37, R22): a booking as it is made, and its next
occurrences. Who may book what is `portal.access.booking_refusal`; the refusal over capacity is
the core's (`portal.reservations.services.check_capacity`)."""

from __future__ import annotations

from datetime import timedelta

from rest_framework import serializers

from portal import access
from portal.api.fields import StrictModelSerializer, StrictSlugRelatedField
from portal.api.serializers.quantities import MibField, QuantityField
from portal.core import clock
from portal.reservations.models import Reservation
from portal.reservations.services import occurrences
from portal.tenancy.models import Project

NEXT_WEEKS = 4


class OccurrenceSerializer(serializers.Serializer):
    """One slot of a booking (read only)."""

    start = serializers.DateTimeField(read_only=True)
    end = serializers.DateTimeField(read_only=True)


class ReservationSerializer(StrictModelSerializer):
    """A booking of whole GPUs for a project, once or weekly (R22.1)."""

    project = StrictSlugRelatedField(slug_field="name", queryset=Project.objects.all())
    gpus = serializers.IntegerField(min_value=1, max_value=100_000, help_text="whole GPUs")
    cpu = QuantityField(
        "cpu", source="cpu_millis", required=False, allow_null=True,
        help_text="CPU booked in all (optional)",
    )  # fmt: skip
    memory = QuantityField(
        "memory", source="memory_bytes", required=False, allow_null=True,
        help_text="memory booked in all (optional)",
    )  # fmt: skip
    memory_mib = MibField(source="memory_bytes")
    pool = serializers.CharField(
        max_length=63, required=False, allow_blank=True, default="",
        help_text="the node pool; empty: any pool",
    )  # fmt: skip
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    next_occurrences = serializers.SerializerMethodField(
        help_text=f"the slots of the next {NEXT_WEEKS} weeks"
    )

    class Meta:
        model = Reservation
        fields = ["id", "name", "project", "gpus", "cpu", "memory", "memory_mib", "pool",
                  "whole_nodes", "start", "end", "weekly", "repeat_until", "created_by",
                  "created_at", "next_occurrences"]  # fmt: skip
        read_only_fields = ["id", "created_at"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        request = self.context.get("request")
        if request is not None:  # a project the asker may not see is as missing (404)
            self.fields["project"].queryset = access.projects_for(request.user)

    def get_next_occurrences(self, booking: Reservation) -> list[dict]:
        now = self.context.get("now") or clock.now()
        slots = occurrences(booking, now, now + timedelta(weeks=NEXT_WEEKS))
        return OccurrenceSerializer([{"start": s, "end": e} for s, e in slots], many=True).data

    def validate(self, attrs: dict) -> dict:
        """The checks that take several fields, each error naming its field."""
        merged = {**self._current(), **attrs}
        errors: dict[str, str] = {}
        start, end = merged.get("start"), merged.get("end")
        if start is not None and end is not None and end <= start:
            errors["end"] = "must be after start"
        if merged.get("weekly") and start is not None and end is not None:
            if end - start > timedelta(weeks=1):
                errors["end"] = "a weekly slot lasts at most a week"
        if merged.get("repeat_until") is not None:
            if not merged.get("weekly"):
                errors["repeat_until"] = "only a weekly booking repeats"
            elif start is not None and merged["repeat_until"] <= start:
                errors["repeat_until"] = "must be after start"
        if merged.get("whole_nodes") and not merged.get("pool"):
            errors["pool"] = "whole nodes are booked in one pool: name it"
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    def _current(self) -> dict:
        """The stored values a PATCH leaves as they are."""
        if self.instance is None:
            return {}
        names = ("project", "gpus", "pool", "whole_nodes", "start", "end", "weekly",
                 "repeat_until")  # fmt: skip
        return {name: getattr(self.instance, name) for name in names}
