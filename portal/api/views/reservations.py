"""REST endpoints of reservations (issue 37, R22): members read their projects' bookings;
cluster admins book anything and a project's admins book for it within a policy
(`portal.access.booking_refusal`); a booking over capacity is refused naming the field."""

from __future__ import annotations

from rest_framework import generics, serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import SAFE_METHODS, BasePermission, IsAuthenticated

from portal import access
from portal.api.serializers.reservations import ReservationSerializer
from portal.core import clock
from portal.reservations import services
from portal.reservations.models import Reservation


def check(user, serializer, booking: Reservation | None) -> None:
    """Whether `user` may book what a valid `serializer` describes (`booking`: the one it
    changes, None for a new one): a 403 for the project, else a 400 naming the field
    (`portal.access.booking_refusal`). The booking page and its preview check through here too,
    so a refusal reads the same on the page, in the CLI and in the JSON."""
    merged = {**(serializer._current() if booking else {}), **serializer.validated_data}
    project = merged["project"]  # one the asker may see (the serializer's queryset)
    refused = access.booking_refusal(
        user, project, merged["gpus"], merged["start"], merged["end"],
        bool(merged.get("weekly")), clock.now(),
    )  # fmt: skip
    if refused and refused[0] == "project":
        raise PermissionDenied(refused[1])
    if refused:
        raise serializers.ValidationError({refused[0]: [refused[1]]})


def fits(user, candidate: Reservation) -> None:
    """A 400 naming the field when `candidate` (unsaved) would not fit beside the other
    bookings (R22.1); what a preview asks before it runs the what-if. A booking is checked again
    under the lock when it is saved (`services.book`)."""
    try:
        services.check_capacity(candidate, access.booking_label(user))
    except services.Refused as exc:
        raise serializers.ValidationError({exc.field: [exc.reason]}) from None


def write(user, serializer, booking: Reservation | None) -> Reservation:
    """Check who may book this (403 for the project, else 400 naming the field), then the
    capacity (400 naming the field, R22.1), through the one service per write."""
    check(user, serializer, booking)
    label = access.booking_label(user)
    try:
        if booking is None:
            return services.book(created_by=user, label=label, **serializer.validated_data)
        return services.change(booking, label=label, **serializer.validated_data)
    except services.Refused as exc:
        raise serializers.ValidationError({exc.field: [exc.reason]}) from None


class MayChangeBooking(BasePermission):
    """Reads for whoever sees the booking; changes asked of `portal.access` (after the 404)."""

    message = "Only cluster admins and the project's admins may change its bookings."

    def has_object_permission(self, request, view, booking) -> bool:
        if request.method in SAFE_METHODS:
            return True
        return access.may_change_booking(request.user, booking.project)


class ReservationScope:
    """The bookings the asker may see, their project joined."""

    permission_classes = [IsAuthenticated, MayChangeBooking]

    def get_queryset(self):
        visible = Reservation.objects.filter(access.reservation_filter(self.request.user))
        return visible.select_related("project", "created_by").order_by("start", "id")

    def _write(self, serializer, booking: Reservation | None):
        return write(self.request.user, serializer, booking)


class ReservationList(ReservationScope, generics.ListCreateAPIView):
    """GET the bookings you may see; POST a new one."""

    serializer_class = ReservationSerializer

    def perform_create(self, serializer):
        serializer.instance = self._write(serializer, None)


class ReservationDetail(ReservationScope, generics.RetrieveUpdateDestroyAPIView):
    """GET, PATCH or DELETE one booking."""

    serializer_class = ReservationSerializer
    lookup_url_kwarg = "pk"
    http_method_names = ["get", "patch", "delete", "head", "options"]

    def perform_update(self, serializer):
        self._write(serializer, serializer.instance)

    def perform_destroy(self, booking):
        services.cancel(booking)
