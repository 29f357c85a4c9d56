"""Per-user limits inside a project over the REST API (issue 36, docs/user-fairness.md)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from rest_framework import serializers

from portal.api.fields import StrictModelSerializer, StrictSlugRelatedField
from portal.tenancy.models import LIMIT_COUNT_MAX, Membership, UserLimit

COUNT = {"min_value": 0, "max_value": LIMIT_COUNT_MAX, "allow_null": True, "required": False}
GIVE_ONE = "give at least one of max_gpus, max_running, max_pending or max_interactive"


class UserLimitSerializer(StrictModelSerializer):
    """The project default (`user` null) or one member's override, field by field (null: as the
    default says; in the default, no limit)."""

    create_only = ("user",)  # a PATCH refuses another; not in its schema (portal/api/schema.py)

    user = StrictSlugRelatedField(
        slug_field="username", queryset=get_user_model().objects.all(), required=False,
        allow_null=True, default=None,
        error_messages={"does_not_exist": "no user named {value!r}"},
        help_text="a member of the project: their override; null or left out: the project "
        "default for every user",
    )  # fmt: skip
    max_gpus = serializers.DecimalField(
        max_digits=9, decimal_places=2, min_value=0, allow_null=True, required=False,
        help_text="the most GPUs one user's running jobs hold in the project (R21.1)",
    )  # fmt: skip
    max_running = serializers.IntegerField(
        help_text="the most running jobs of one user in the project (R21.2)", **COUNT
    )
    max_pending = serializers.IntegerField(
        help_text="the most pending jobs of one user in the project: a submission past it is "
        "refused with a 409 naming it",
        **COUNT,
    )
    max_interactive = serializers.IntegerField(
        help_text="the most running interactive sessions of one user in the project (R21.3)",
        **COUNT,
    )

    class Meta:
        model = UserLimit
        fields = ["id", "user", *UserLimit.FIELDS, "created_at"]
        read_only_fields = ["id", "created_at"]

    def validate_user(self, user):
        if self.instance is not None:
            if user != self.instance.user:
                raise serializers.ValidationError("whose limit it is cannot be changed")
            return user
        project = self.context["project"]
        if user is not None and not Membership.objects.filter(user=user, project=project).exists():
            raise serializers.ValidationError(
                f"{user.get_username()} is not a member of {project.name}"
            )
        return user

    def validate(self, attrs: dict) -> dict:
        values = {name: getattr(self.instance, name, None) for name in UserLimit.FIELDS}
        values.update({name: attrs[name] for name in UserLimit.FIELDS if name in attrs})
        if all(value is None for value in values.values()):
            raise serializers.ValidationError({"max_gpus": [GIVE_ONE]})
        return attrs
