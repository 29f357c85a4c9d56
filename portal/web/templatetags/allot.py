"""Template filters of Allot's pages."""

from __future__ import annotations

from django import template

from portal import access
from portal.core import formats
from portal.web.rules import link_rules
from scheduler.quantity import MIB, format_cpu, format_memory

register = template.Library()


@register.filter
def duration_s(seconds) -> str:
    """Seconds in plain words: 45 s, 12 min, 3 h 20 min, 2 d 4 h (`formats.duration`)."""
    return formats.duration(seconds)


@register.filter
def gpus(value) -> str:
    """GPUs as one number spelling on every page: 0.625 -> "0.63" (`formats.gpus`)."""
    return formats.gpus(value)


@register.filter
def gpu_hours(value) -> str:
    """GPU-hours with two decimals: "0.00", "0.02" (`formats.gpu_hours`)."""
    return formats.gpu_hours(value)


@register.filter
def min_runtime(seconds) -> str:
    """A minimum run time before eviction (R7.4) in plain words: never (-1), none (0), else
    `duration_s`."""
    if seconds is None or seconds == "":
        return "-"
    if float(seconds) < 0:
        return "never"
    if float(seconds) == 0:
        return "none"
    return duration_s(seconds)


@register.filter
def rule_links(text) -> str:
    """A scheduler message with each rule code ("R9.2") a link to its explanation on /rules/."""
    return link_rules("" if text is None else str(text))


@register.filter
def cores(millis) -> str:
    """Millicores in words: 16000 -> "16 cores", 500 -> "0.5 cores" (`formats.cores`)."""
    return formats.cores(millis)


@register.filter
def memory(value) -> str:
    """Bytes in words (issue 33, `formats.memory`): 64 GiB -> "64 GiB", 50000000 -> "50 MB",
    0 -> "0 GiB"."""
    return formats.memory(value)


@register.filter
def quantity_cpu(millis) -> str:
    """Millicores as a form reads them back ("2", "500m"); empty when None."""
    return "" if millis is None else format_cpu(int(millis))


@register.filter
def quantity_memory(value) -> str:
    """Bytes as a form reads them back ("16Gi", "50M"); empty when None."""
    return "" if value is None else format_memory(int(value))


UNIT_SUFFIXES = ("_bytes", "_mib", "_millis", "_s")
NOTHING = "\N{EN DASH}"


@register.filter
def change_field(field) -> str:
    """An audit entry's changed field as people say it: "memory_limit_bytes" -> "memory limit"."""
    name = str(field)
    for suffix in UNIT_SUFFIXES:
        name = name.removesuffix(suffix)
    return name.replace("_", " ")


@register.filter
def change_value(value, field) -> str:
    """One side of an audit entry's change in the unit of its field (issue 34 item 16: the log
    showed "memory_limit_mib: (dash) -> 614400"): bytes (and the MiB of entries written before
    issue 33) as "600 GiB", millicores as "8 cores", seconds as a duration; an en dash for
    nothing."""
    if value is None or value == "":
        return NOTHING
    name = str(field)
    try:
        if name.endswith("_bytes"):
            return memory(value)
        if name.endswith("_mib"):
            return memory(int(value) * MIB)
        if name.endswith("_millis"):
            return cores(value)
        if name.endswith("_s"):
            return min_runtime(value) if "min_runtime" in name else duration_s(value)
    except (TypeError, ValueError):
        pass
    return str(value)


@register.simple_tag(takes_context=True)
def for_viewer(context, text) -> str:
    """A scheduler's text as the page's viewer may read it: other projects' jobs unnamed
    (issue 32 item 7; `access.texts_for`, made once per page)."""
    if not text:
        return text or ""
    redact = context.get("_redact")
    if redact is None:
        redact = access.texts_for(context["request"].user)
        context.dicts[0]["_redact"] = redact
    return redact(str(text))
