"""Writes to a project's webhooks and to each user's notification settings.

The REST API and the web pages both write through these verbs. What is valid (a URL) is checked
before, by the API's serializers, which the pages reuse; who may write is asked of
`portal.access` by the caller.
"""

from __future__ import annotations

from django.contrib.auth.base_user import AbstractBaseUser

from portal.audit import services as audit
from portal.notify.models import Preference, Webhook
from portal.tenancy.models import Project


def create_webhook(project: Project, url: str, *, active: bool = True) -> Webhook:
    """A new webhook of `project` with a fresh signing secret, which the caller shows once."""
    webhook = Webhook.objects.create(project=project, url=url, active=active)
    audit.record("webhook.created", webhook, changes={"url": [None, url], "active": [None, active]})
    return webhook


def update_webhook(
    webhook: Webhook, *, url: str | None = None, active: bool | None = None
) -> Webhook:
    """Change a webhook's `url` or `active` (None: unchanged); its secret and project stay."""
    fields = {key: value for key, value in (("url", url), ("active", active)) if value is not None}
    before = audit.snapshot(webhook, fields)
    for key, value in fields.items():
        setattr(webhook, key, value)
    if fields:
        webhook.save(update_fields=list(fields))
        audit.record_changes(webhook, before, {"webhook.changed": None})
    return webhook


def delete_webhook(webhook: Webhook) -> None:
    """Remove a webhook; its delivery log goes with it."""
    audit.record("webhook.deleted", webhook, changes={"url": [webhook.url, None]})
    webhook.delete()


def set_preference(user: AbstractBaseUser, **fields) -> Preference:
    """Change which notifications `user` gets (`email`, `browser`); the others keep their value,
    the default (on) when the user had none."""
    before = audit.snapshot(Preference.objects.filter(user=user).first() or Preference(), fields)
    preference, _ = Preference.objects.update_or_create(user=user, defaults=fields)
    audit.record_changes(preference, before, {"setting.changed": None},
                         label=f"{user.get_username()}'s notifications")  # fmt: skip
    return preference
