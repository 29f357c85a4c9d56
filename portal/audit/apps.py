from django.apps import AppConfig


class AuditConfig(AppConfig):
    """The append-only audit log; its receivers record sign-ins and Django admin edits."""

    name = "portal.audit"
    label = "audit"

    def ready(self) -> None:
        from portal.audit import signals

        signals.connect()
