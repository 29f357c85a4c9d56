"""Single sign-on rules in the REST API (and the /sso/rules/ page, which reuses it)."""

from __future__ import annotations

from rest_framework import serializers

from portal.api.fields import StrictModelSerializer, StrictSlugRelatedField
from portal.tenancy.models import GroupRoleRule, Project, Role

GROUP_MAX = GroupRoleRule._meta.get_field("group").max_length


class SSORuleSerializer(StrictModelSerializer):
    """Members of the identity provider's `group` get `role` in `project` at their sign-in."""

    group = serializers.CharField(
        max_length=GROUP_MAX,
        help_text="the group's name exactly as the identity provider's groups claim sends it",
    )
    project = StrictSlugRelatedField(
        slug_field="name",
        queryset=Project.objects.all(),
        error_messages={"does_not_exist": "No project named {value!r}."},
    )
    role = serializers.ChoiceField(choices=Role.choices, default=Role.RESEARCHER)

    class Meta:
        model = GroupRoleRule
        fields = ["id", "group", "project", "role", "created_at"]
        read_only_fields = ["id", "created_at"]
        validators = []  # a duplicate is the service's 409 on `group`, not a 400
