"""REST endpoints of notifications: a project's webhooks and their delivery log (the project's
admins), and each user's own notification settings."""

from __future__ import annotations

from django.http import Http404
from rest_framework import generics, serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated

from portal import access
from portal.api.fields import StrictModelSerializer
from portal.notify import services, targets
from portal.notify.models import Delivery, Preference, Webhook

# What the schema offers for a new webhook's URL: an http(s) URL with a host name (DNS labels,
# a top-level domain of letters) and a plain path, a subset of what Django's URLValidator takes.
# A name is resolved when the webhook is saved and at every delivery: one that resolves to a
# private, loopback or metadata address is refused then (portal.notify.targets), which no
# pattern can say. Responses show the URL as saved.
LABEL = "[a-z0-9](?:[a-z0-9-]{0,40}[a-z0-9])?"  # short: a host name is at most 253
WEBHOOK_URL = rf"^https?://{LABEL}(?:\.{LABEL}){{0,3}}\.[a-z]{{2,63}}(?:/[A-Za-z0-9._~-]*)*$"


class WebhookURLField(serializers.URLField):
    """A webhook's URL, WEBHOOK_URL in the request bodies' schema (portal/api/schema.py)."""

    request_pattern = WEBHOOK_URL


class WebhookSerializer(StrictModelSerializer):
    """A webhook; its secret is shown once, in the answer to the POST that creates it."""

    url = WebhookURLField(max_length=2000)

    class Meta:
        model = Webhook
        fields = ["id", "url", "active", "created_at", "secret"]
        read_only_fields = ["id", "created_at", "secret"]

    def validate_url(self, url: str) -> str:
        """Public addresses only (`portal.notify.targets`): say which address and why not."""
        try:
            targets.check_new(url)
        except targets.TargetRefused as refused:
            raise serializers.ValidationError(str(refused)) from None
        return url

    def to_representation(self, webhook: Webhook) -> dict:
        data = super().to_representation(webhook)
        if not self.context.get("show_secret"):
            data.pop("secret")
        return data


class DeliverySerializer(serializers.ModelSerializer):
    """One entry of the delivery log: the status code and a short fixed reason, never the body
    of the receiver's reply."""

    class Meta:
        model = Delivery
        fields = ["id", "event", "job_name", "payload", "attempts", "status_code", "error",
                  "delivered", "created_at", "last_attempt_at"]  # fmt: skip
        read_only_fields = fields


class PreferenceSerializer(StrictModelSerializer):
    """Which notifications the signed-in user gets."""

    class Meta:
        model = Preference
        fields = ["email", "browser"]


class ProjectAdminMixin:
    """The project by name, for its admins (and cluster admins) only: 404 when not visible,
    403 for members without the admin role."""

    def project(self):
        project = access.get_project_for(self.request.user, self.kwargs["name"])
        if not access.can_manage_members(self.request.user, project):
            raise PermissionDenied("Only the project's admins may see or change its webhooks.")
        return project


class WebhookList(ProjectAdminMixin, generics.ListCreateAPIView):
    """GET a project's webhooks; POST one (its signing secret is in this answer only)."""

    serializer_class = WebhookSerializer
    permission_classes = [IsAuthenticated]

    def get_queryset(self):
        return Webhook.objects.filter(project=self.project()).order_by("id")

    def create(self, request, *args, **kwargs):
        self.project()  # 404 or 403 before anything is said about the body
        return super().create(request, *args, **kwargs)

    def perform_create(self, serializer):
        serializer.instance = services.create_webhook(self.project(), **serializer.validated_data)
        serializer.context["show_secret"] = True


class WebhookDetail(ProjectAdminMixin, generics.RetrieveUpdateDestroyAPIView):
    """GET, PATCH (its url, or active: false to pause it) or DELETE one webhook of the project."""

    serializer_class = WebhookSerializer
    permission_classes = [IsAuthenticated]
    http_method_names = ["get", "patch", "delete", "head", "options"]

    def get_object(self) -> Webhook:
        webhook = Webhook.objects.filter(project=self.project(), id=self.kwargs["pk"]).first()
        if webhook is None:
            raise Http404("No such webhook.")
        return webhook

    def perform_update(self, serializer):
        services.update_webhook(serializer.instance, **serializer.validated_data)

    def perform_destroy(self, webhook):
        services.delete_webhook(webhook)


class DeliveryList(ProjectAdminMixin, generics.ListAPIView):
    """GET the webhook's delivery log, newest first: every attempt's status and error."""

    serializer_class = DeliverySerializer
    permission_classes = [IsAuthenticated]

    def get_queryset(self):
        webhook = Webhook.objects.filter(project=self.project(), id=self.kwargs["pk"]).first()
        if webhook is None:
            raise Http404("No such webhook.")
        return webhook.deliveries.all()


class MyPreference(generics.RetrieveUpdateAPIView):
    """GET or PATCH your notification settings (email, browser toasts)."""

    serializer_class = PreferenceSerializer
    permission_classes = [IsAuthenticated]
    http_method_names = ["get", "patch", "head", "options"]

    def get_object(self) -> Preference:
        # the defaults (both on) until the user first saves theirs: reading writes nothing
        user = self.request.user
        return Preference.objects.filter(user=user).first() or Preference(user=user)

    def perform_update(self, serializer):
        serializer.instance = services.set_preference(
            self.request.user, **serializer.validated_data
        )
