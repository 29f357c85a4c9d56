"""One colour per project on every chart (issue 34 item 10: a project was blue on Analytics and
orange on Accounting, each page colouring its projects in the order it listed them).

A project's colour is the palette's entry at its place in the creation order of all projects,
so it is the same on every page and for every reader, whatever that reader may see; the pages
hand the map to their scripts (`project-colours`, read by `Allot.colour` in format.js).
"""

from __future__ import annotations

from portal.tenancy.models import Project

PALETTE = ("#2f6fbd", "#e07a1f", "#2a9d5c", "#b3261e", "#6b3fa0", "#8c564b", "#d6489f",
           "#5f6b7a", "#a39b00", "#17a2b8")  # fmt: skip


def project_colours(names=None) -> dict[str, str]:
    """{project: colour} for `names` (None: all projects), by creation order."""
    ordered = Project.objects.order_by("id").values_list("name", flat=True)
    colours = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(ordered)}
    return colours if names is None else {name: colours[name] for name in names if name in colours}
