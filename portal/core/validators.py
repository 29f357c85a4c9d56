"""Rules shared by the models, the API and the settings: Kubernetes object names (R-free plain
checks) and the longest minimum run time before eviction."""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
NAME_MAX = 40  # project and job names become Kubernetes names with prefixes (runai-<project>)
MIN_RUNTIME_MAX_S = 365 * 24 * 3600  # the longest R7.4 minimum run time (settings, models, API)


def validate_dns_label(value: str) -> None:
    """A lower-case DNS label (RFC 1123): a-z, 0-9 and '-', starting and ending alphanumeric."""
    if not DNS_LABEL.match(value or ""):
        raise ValidationError(
            "must be a DNS label: lower-case letters, digits and '-', "
            "starting and ending with a letter or digit",
            code="invalid",
        )


def validate_dns_subdomain(value: str) -> None:
    """A lower-case DNS subdomain (a Kubernetes node name): labels joined by dots."""
    if not DNS_SUBDOMAIN.match(value or ""):
        raise ValidationError(
            "must be a DNS name: lower-case letters, digits, '-' and '.'", code="invalid"
        )
