"""API tokens in the REST API: signing in for a new one, and listing them (never the key)."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal.api.fields import StrictSerializer
from portal.tenancy.models import (
    TOKEN_EXPIRY_FORMS,
    TOKEN_LONGEST_LIFE,
    TOKEN_NAME_MAX,
    ApiToken,
    parse_token_expiry,
)

DEFAULT_TOKEN_NAME = "API token"
EXPIRY_HELP = (
    f"when the token stops working: {TOKEN_EXPIRY_FORMS} (UTC when it names no zone), at most "
    f"{TOKEN_LONGEST_LIFE.days} days away; absent or null: never"
)


# what `expires_in` takes: a duration the schema can bound (each unit's largest here is well
# within TOKEN_LONGEST_LIFE), or a time (in the future and within it: said in words)
DURATION_PATTERN = r"^(?:[1-9][0-9]{0,5}m|[1-9][0-9]{0,3}h|[1-9][0-9]{0,2}d|[1-9][0-9]?w)$"


@extend_schema_field(
    {"anyOf": [{"type": "string", "pattern": DURATION_PATTERN},
               {"type": "string", "format": "date-time"}]}
)  # fmt: skip
class ExpiryField(serializers.Field):
    """`expires_in`: a duration from now or a moment, read as an aware datetime (see
    `parse_token_expiry`)."""

    def to_internal_value(self, data) -> datetime:
        if not isinstance(data, str):
            raise serializers.ValidationError(f"must be {TOKEN_EXPIRY_FORMS}")
        try:
            return parse_token_expiry(data, timezone.now())
        except ValueError as reason:
            raise serializers.ValidationError(str(reason)) from None

    def to_representation(self, value):
        return value.isoformat() if value else None


class NewTokenSerializer(StrictSerializer):
    """What a new token is called and when it expires (the API and `/me/` read the same)."""

    name = serializers.CharField(
        max_length=TOKEN_NAME_MAX, required=False, default=DEFAULT_TOKEN_NAME,
        help_text="to tell it apart later",
    )  # fmt: skip
    expires_in = ExpiryField(required=False, allow_null=True, default=None, help_text=EXPIRY_HELP)


class TokenRequestSerializer(NewTokenSerializer):
    """A username and password, exchanged for a new API token."""

    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False)


class TokenSerializer(serializers.ModelSerializer):
    """A token as its owner sees it: never the key, only its first characters (`prefix`)."""

    expired = serializers.SerializerMethodField()
    current = serializers.SerializerMethodField(help_text="the token this request signed in with")

    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "created", "last_used", "expires_at", "expired",
                  "current"]  # fmt: skip
        read_only_fields = fields

    def get_expired(self, token: ApiToken) -> bool:
        return token.is_expired()

    def get_current(self, token: ApiToken) -> bool:
        request = self.context.get("request")
        auth = getattr(request, "auth", None)
        return isinstance(auth, ApiToken) and auth.pk == token.pk


class IssuedTokenSerializer(TokenSerializer):
    """A token just made, with its key: shown this once."""

    token = serializers.CharField(
        help_text="the key for `Authorization: Token <key>`, shown once (its SHA-256 is kept)"
    )
    username = serializers.CharField()

    class Meta(TokenSerializer.Meta):
        fields = ["token", "username", *TokenSerializer.Meta.fields]
        read_only_fields = fields
