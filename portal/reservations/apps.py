from django.apps import AppConfig


class ReservationsConfig(AppConfig):
    """GPUs booked ahead for a project, once or weekly (issue 37; rules R22 in
    docs/reservations.md)."""

    name = "portal.reservations"
    label = "reservations"
