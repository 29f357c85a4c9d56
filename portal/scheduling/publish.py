"""Tell every open browser that the cluster changed: the overview on the Channels group "overview".

Browsers need at most about one update a second, and building the overview of a 4,000-job
cluster costs a good part of one, so a process publishes at most every `MIN_INTERVAL_S`, and
never spends more than 1/`MAX_SHARE` of its time building overviews (a slow build stretches the
interval); a change that falls inside the interval is owed and goes out with the next cycle,
which the cycle's caller runs as soon as the interval ends (`owed_in`): the embedded timer wakes
then, the Celery task asks for a cycle then. The pacing lives in the cache, so consecutive cycles
in different worker processes pace the broadcasts together.
The broadcast is derived data (the database stays the source of truth): a channel layer that is
down costs the viewers one update, never the cycle that already committed.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, replace

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.core.cache import cache

from portal.dashboards.overview import build_full_overview  # cut down per viewer by consumers

logger = logging.getLogger(__name__)

GROUP = "overview"
MIN_INTERVAL_S = 1.0
MAX_SHARE = 5  # at most a fifth of the cycle process's time goes into building overviews
REFRESH_S = 5.0  # with no change, utilization figures and run times still refresh this often

clock = time.time  # wall-clock seconds: comparable across processes (tests move it by hand)
STATE_KEY = "allot:overview:published"  # when the last broadcast went out, its cost, what is owed
_lock = threading.Lock()


@dataclass(frozen=True)
class Pacing:
    """The broadcast pacing every cycle process shares (in the cache): the wall-clock time of
    the last broadcast, how long it took to build and send, and whether a change is owed."""

    last: float = float("-inf")
    build_s: float = 0.0
    owed: bool = False

    @property
    def interval(self) -> float:
        """Seconds between broadcasts: `MIN_INTERVAL_S`, stretched to `MAX_SHARE` x the build."""
        return max(MIN_INTERVAL_S, MAX_SHARE * self.build_s)


def _pacing() -> Pacing:
    return cache.get(STATE_KEY) or Pacing()


def _keep(pacing: Pacing) -> None:
    cache.set(STATE_KEY, pacing, timeout=None)


def publish_overview(changed: bool = True) -> bool:
    """Send `{"type": "overview.updated", "overview": ...}` (the full view) if something changed
    (now or owed) and the last broadcast is `MIN_INTERVAL_S` old, or unchanged after
    `REFRESH_S`; True when it sent."""
    with _lock:
        pacing = _pacing()
        owed = pacing.owed or changed
        since = clock() - pacing.last
        if since < pacing.interval or not (owed or since >= REFRESH_S):
            if owed != pacing.owed:
                _keep(replace(pacing, owed=owed))
            return False
        began = clock()
        _keep(Pacing(last=began, build_s=pacing.build_s))
    sent = _send()
    _keep(replace(_pacing(), build_s=clock() - began))
    return sent


def owed_in() -> float | None:
    """Seconds until an owed change may go out (0 when it may now), or None when none is owed."""
    pacing = _pacing()
    if not pacing.owed:
        return None
    return max(0.0, pacing.interval - (clock() - pacing.last))


def _send() -> bool:
    layer = get_channel_layer()
    if layer is None:
        return False
    try:
        message = {"type": "overview.updated", "overview": build_full_overview()}
        async_to_sync(layer.group_send)(GROUP, message)
    except Exception:
        logger.exception("could not publish the overview to the %r group", GROUP)
        return False
    return True
