"""The audit log's entries as the API shows them (read only)."""

from __future__ import annotations

from rest_framework import serializers

from portal.audit.models import AuditEntry


class AuditEntrySerializer(serializers.ModelSerializer):
    """Who (`actor`: a username, "system" or "anonymous"), when, from which `address`, what
    (`action`, a dotted code) to which target, and `changes` as {field: [before, after]}."""

    actor = serializers.CharField(source="actor_username", read_only=True)
    changes = serializers.DictField(child=serializers.ListField(allow_empty=True), read_only=True)

    class Meta:
        model = AuditEntry
        fields = ["id", "time", "actor", "address", "action", "target_type", "target_id",
                  "target_label", "changes", "note"]  # fmt: skip
        read_only_fields = fields
