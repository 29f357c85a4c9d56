"""Rules shared by the models, the API and the settings: Kubernetes object names (R-free plain
checks), volume mount paths and the longest minimum run time before eviction."""

from __future__ import annotations

import posixpath
import re

from django.core.exceptions import ValidationError

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
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


# validate_mount_path as a pattern, for the API's schema: one or more '/part', no part '.' or '..',
# no control characters (a part may hold anything else, as a directory name may)
MOUNT_PATH = r"^(/(?!\.\.?(/|$))[^/\x00-\x1f\x7f-\x9f]+)+$"


def validate_mount_path(value: str) -> None:
    """A directory a volume is mounted on in a job's pods: an absolute, normalised path (no '.'
    or '..' parts, no '//', no trailing '/'), without control characters, and never '/' itself
    (issue 22 item 8: '/../../etc' and '/data\\nx' were accepted)."""
    if not value.startswith("/"):
        raise ValidationError("must be an absolute path such as /data", code="invalid")
    if CONTROL.search(value):
        raise ValidationError("must not contain control characters", code="invalid")
    if value == "/":
        raise ValidationError("must not be / itself: mount on a directory such as /data")
    if ".." in value.split("/"):
        raise ValidationError("must not contain '..'", code="invalid")
    plain = posixpath.normpath("/" + value.lstrip("/"))  # (normpath keeps a leading '//')
    if plain != value:
        raise ValidationError(
            f"must be written plainly, as {plain} (no '.', '//' or trailing '/')", code="invalid"
        )
