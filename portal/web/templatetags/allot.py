"""Template filters of Allot's pages."""

from __future__ import annotations

from django import template

from portal.web.rules import link_rules

register = template.Library()


@register.filter
def duration_s(seconds) -> str:
    """Seconds in plain words: 45 s, 12 min, 3 h 20 min, 2 d 4 h."""
    if seconds is None or seconds == "":
        return "-"
    total = max(0, round(float(seconds)))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min"
    return f"{secs} s"


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
