"""`/rules/`: what the rule codes in the scheduler's messages mean, e.g. "(R9.2)" in "waits: may
not reclaim (R9.2)". Short explanations in plain words of the rule book's rules (docs/rules.md:
the KAI / Run:AI semantics Allot follows); every code in a message links to its entry here."""

from __future__ import annotations

import re

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

SECTIONS = [
    ("The scheduling cycle", [
        ("R1.1",
         "Every few seconds the scheduler takes a snapshot of nodes, projects and "
         "jobs and runs its actions in order: allocate, consolidate, reclaim, "
         "preempt."),
        ("R1.2",
         "Fair shares are computed once per cycle from that snapshot."),
        ("R1.3",
         "An eviction takes time: the evicted job releases its GPUs and the job "
         "that needed them starts once they are free."),
    ]),
    ("Fair share", [
        ("R2.4",
         "A project's demand is the GPUs of its running jobs plus those of its "
         "pending jobs."),
        ("R2.5",
         "What a project can ask for is its demand, capped by its limit."),
        ("R2.6",
         "The GPUs divided among projects are those of ready nodes."),
        ("R2.9",
         "GPUs beyond the quotas are shared out in rounds, in proportion to each "
         "project's over-quota weight, until nobody wants more or nothing is left."),
        ("R2.10",
         "What is still left after those rounds goes out one whole GPU at a time."),
        ("R2.11",
         "Departments first divide the cluster; each department then divides its "
         "share among its projects the same way."),
        ("R2.12",
         "A project may hold up to the larger of its quota and its fair share "
         "(never above its limit) without being reclaimed from."),
    ]),
    ("Capacity checks", [
        ("R3.1",
         "A job starts only if its project (and department) stays within its "
         "limit."),
        ("R3.2",
         "A job that cannot be evicted (interactive) starts only within its "
         "project's quota."),
    ]),
    ("Who is served first", [
        ("R4.1",
         "Projects furthest below their fair share are served first; among equals,"
         " the one that waited longest."),
        ("R4.2",
         "With departments, the department furthest below its share goes first, "
         "then its projects in the same order."),
        ("R4.3",
         "Inside a project, higher-priority jobs go first, then older ones; "
         "evicted jobs keep their place in the queue."),
        ("R4.4",
         "Jobs are tried in that order; each starts where it fits, or waits with "
         "the reason."),
    ]),
    ("Placement on nodes and GPUs", [
        ("R5.1",
         "Candidate nodes are scored; the best one that fits is used."),
        ("R5.2",
         "By default jobs are packed onto the fullest nodes, to keep whole nodes "
         "free for big jobs."),
        ("R5.3",
         "A job asking for whole GPUs needs that many completely free GPUs on one "
         "node."),
        ("R5.4",
         "A fraction of a GPU (0.5) shares a device with other fractions; it needs"
         " a device with that much left."),
    ]),
    ("Gangs", [
        ("R6.1",
         "A job of several pods starts all of them together or none."),
        ("R6.4",
         "A gang that lost pods and cannot run complete is stopped and queued "
         "again."),
    ]),
    ("Preemptibility and priority", [
        ("R7.1",
         "Training jobs are preemptible by default; interactive and build jobs are"
         " not."),
        ("R7.3",
         "Jobs that cannot be evicted are never chosen as victims of reclaim, "
         "preempt or consolidation."),
        ("R7.4",
         "A minimum run time can protect a job from reclaim or preemption until it"
         " has run that long."),
    ]),
    ("Evictions", [
        ("R8.1",
         "Possible victims are ordered: the most over-served project first, its "
         "newest, lowest-priority job first."),
        ("R8.2",
         "Victims are added one at a time until enough GPUs would be free."),
        ("R8.3",
         "Several ways of freeing GPUs are tried, the cheapest first."),
        ("R8.5",
         "Each way is simulated before anything is evicted: if the waiting job "
         "still would not fit, nothing is evicted."),
    ]),
    ("Reclaim (between projects)", [
        ("R9.1",
         "Waiting jobs try to take GPUs back from other projects in queue order."),
        ("R9.2",
         "A job may reclaim only if its project stays within its fair share (or "
         "quota) with it; a project already above its share waits instead."),
        ("R9.3",
         "Only preemptible jobs of other projects that are above their own share "
         "can be reclaimed from."),
        ("R9.4",
         "A reclaim is allowed only if the projects evicted from stay at or above "
         "their share afterwards."),
        ("R9.5",
         "A reclaim must not push the reclaiming project over its share or limit."),
        ("R9.6",
         "Once a reclaim succeeds, its victims release their GPUs and the waiting "
         "job gets them."),
    ]),
    ("Preempt (inside one project)", [
        ("R10.1",
         "A waiting job may evict jobs of its own project to start."),
        ("R10.2",
         "Only preemptible jobs of the same project with a strictly lower priority"
         " can be preempted."),
    ]),
    ("Consolidation", [
        ("R11.1",
         "When enough GPUs are free in total but scattered, running jobs may be "
         "moved to make room in one place."),
    ]),
    ("Per-user limits (inside one project)", [
        ("R21.1",
         "A job starts only if its user's running jobs in the project, with it, hold no "
         "more GPUs than the project's per-user GPU limit for them."),
        ("R21.2",
         "A job starts only if its user has fewer running jobs in the project than "
         "their running-jobs limit."),
        ("R21.3",
         "An interactive session starts only if its user has fewer running sessions "
         "in the project than their interactive-sessions limit."),
    ]),
]  # fmt: skip
RULES = {code: text for _, rules in SECTIONS for code, text in rules}
CODE = re.compile(r"\bR(\d{1,2})\.(\d{1,2})\b")


def link_rules(text: str) -> SafeString:
    """`text`, escaped, with each known rule code a link to its explanation."""

    def link(match: re.Match) -> str:
        code = match.group(0)
        if code not in RULES:
            return code
        return f'<a class="rule" href="/rules/#{code}" title="{escape(RULES[code])}">{code}</a>'

    return mark_safe(CODE.sub(link, str(escape(text))))  # escaped above


@login_required
def rules(request: HttpRequest) -> HttpResponse:
    """The rule codes with what each means."""
    return render(request, "web/rules.html", {"sections": SECTIONS})
