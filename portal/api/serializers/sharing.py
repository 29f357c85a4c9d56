"""A notebook's shares and an admin's access to it in the REST API (issue 32 item 3)."""

from __future__ import annotations

from rest_framework import serializers

from portal.api.fields import StrictBooleanField, StrictSerializer
from portal.jobs.models import SessionGrant


class SessionGrantSerializer(serializers.ModelSerializer):
    """One grant in force: a share (with a user, or `username` null: the whole project) or an
    admin's access, with its reason and end."""

    username = serializers.CharField(source="user.username", read_only=True, allow_null=True,
                                     default=None)  # fmt: skip
    granted_by = serializers.CharField(source="granted_by.username", read_only=True,
                                       allow_null=True, default=None)  # fmt: skip

    class Meta:
        model = SessionGrant
        fields = ["id", "kind", "username", "granted_by", "reason", "created_at", "expires_at"]
        read_only_fields = fields


class NewShareSerializer(StrictSerializer):
    """Whom to share with: a researcher or admin of the project, or `everyone`."""

    username = serializers.CharField(required=False, max_length=150)
    everyone = StrictBooleanField(required=False, default=False)

    def validate(self, data: dict) -> dict:
        if bool(data.get("username")) == bool(data.get("everyone")):
            raise serializers.ValidationError(
                {"username": ["give a username or everyone: true, not both and not neither"]}
            )
        return data


class AccessSerializer(StrictSerializer):
    """Why an admin opens another's notebook: its owner sees it."""

    reason = serializers.CharField(max_length=500, allow_blank=False, trim_whitespace=True)


class AccessGrantedSerializer(serializers.Serializer):
    """Where to open the notebook, and until when the access lasts."""

    url = serializers.CharField()
    expires_at = serializers.DateTimeField()
