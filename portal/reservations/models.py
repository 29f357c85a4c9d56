"""A reservation: whole GPUs booked for a project from `start` to `end`, once or weekly.

Only the booking is stored; its occurrences are derived (`portal.reservations.services`), and
the scheduler sees each occurrence near the cycle's time as a `scheduler.model.Reservation`.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from portal.tenancy.models import Project


class Reservation(models.Model):
    """One booking of one project (R22.1): `gpus` whole GPUs, optionally CPU (millicores) and
    memory (bytes) in all, on node pool `pool` ("" = every pool the booking may take) and, with
    `whole_nodes`, as whole nodes; from `start` to `end`, and with `weekly` again every week
    while the occurrence starts before `repeat_until` (None: for ever)."""

    name = models.CharField(max_length=63)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="reservations")
    gpus = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    cpu_millis = models.BigIntegerField(null=True, blank=True, validators=[MinValueValidator(0)])
    memory_bytes = models.BigIntegerField(null=True, blank=True, validators=[MinValueValidator(0)])
    pool = models.CharField(max_length=63, blank=True, default="")
    whole_nodes = models.BooleanField(default=False)
    start = models.DateTimeField()
    end = models.DateTimeField()
    weekly = models.BooleanField(default=False)
    repeat_until = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="reservations",
    )  # fmt: skip
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["start", "id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(end__gt=models.F("start")), name="reservation_ends_after_start"
            ),
            models.CheckConstraint(condition=models.Q(gpus__gte=1), name="reservation_has_gpus"),
            models.UniqueConstraint(fields=["name"], name="reservation_name_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.project})"


class ReservationNotice(models.Model):
    """That the project was told of one occurrence before its start (once per occurrence,
    `portal.reservations.services.announce`); `event` is the project event it was told by."""

    reservation = models.ForeignKey(Reservation, on_delete=models.CASCADE, related_name="notices")
    occurrence_start = models.DateTimeField()
    event = models.ForeignKey(
        "jobs.JobEvent", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    sent_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["reservation", "occurrence_start"], name="reservation_notice_once"
            )
        ]
