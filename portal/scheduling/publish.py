"""Tell every open browser that the cluster changed: the overview on the Channels group "overview".

Browsers need at most about one update a second, and building the overview of a 4,000-job
cluster costs a good part of one, so a process publishes at most every `MIN_INTERVAL_S`, and
never spends more than 1/`MAX_SHARE` of its time building overviews (a slow build stretches the
interval); a change that falls inside the interval is owed and goes out with the next cycle,
which the cycle's caller runs as soon as the interval ends (`owed_in`): the embedded timer wakes
then, the Celery task asks for a cycle then.
The broadcast is derived data (the database stays the source of truth): a channel layer that is
down costs the viewers one update, never the cycle that already committed.
"""

from __future__ import annotations

import logging
import threading
from time import monotonic

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)

GROUP = "overview"
MIN_INTERVAL_S = 1.0
MAX_SHARE = 5  # at most a fifth of the cycle process's time goes into building overviews
REFRESH_S = 5.0  # with no change, utilization figures and run times still refresh this often

_lock = threading.Lock()
_last = float("-inf")
_build_s = 0.0  # how long the last broadcast took to build and send
_owed = False


def publish_overview(changed: bool = True) -> bool:
    """Send `{"type": "overview.updated", "overview": ...}` (the full view) if something changed
    (now or owed) and the last broadcast is `MIN_INTERVAL_S` old, or unchanged after
    `REFRESH_S`; True when it sent."""
    global _last, _owed, _build_s
    with _lock:
        _owed = _owed or changed
        interval = _interval()
        since = monotonic() - _last
        if since < interval or not (_owed or since >= REFRESH_S):
            return False
        _owed, _last = False, monotonic()
    sent = _send()
    _build_s = monotonic() - _last
    return sent


def owed_in() -> float | None:
    """Seconds until an owed change may go out (0 when it may now), or None when none is owed."""
    with _lock:
        if not _owed:
            return None
        return max(0.0, _interval() - (monotonic() - _last))


def _interval() -> float:
    """Seconds between broadcasts: `MIN_INTERVAL_S`, stretched to `MAX_SHARE` x the last build."""
    return max(MIN_INTERVAL_S, MAX_SHARE * _build_s)


def _send() -> bool:
    from portal.jobs.overview import build_full_overview  # cut down per viewer by consumers

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
