"""Fair-share division among sibling queues: the KAI "proportion" plugin (R2).

Amounts are GPUs in thousandths of a device (ints) so the division is exact where KAI's is exact;
the over-quota offers of R2.9 are real numbers and are floored to whole GPUs as KAI does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

UNIT = 1000  # one whole GPU in thousandths


@dataclass
class Share:
    """One queue's inputs and result for one division (R2.1-R2.5).

    `deserved` None means unlimited quota (KAI's -1); `limit` None means no limit. `request` is
    allocated + pending GPUs of the queue (R2.4). `order` breaks remainder ties (older first).
    """

    name: str
    deserved: int | None
    limit: int | None
    weight: float
    request: int
    priority: int = 100
    order: int = 0
    usage: float = 0.0
    fair_share: int = 0
    children: list[Share] = field(default_factory=list)

    @property
    def requestable(self) -> int:
        """min(request, limit) (R2.5)."""
        return self.request if self.limit is None else min(self.request, self.limit)

    def satisfied(self) -> bool:
        """No more over-quota share wanted: request reached, or limit reached (R2.9)."""
        if self.request <= self.fair_share:
            return True
        return self.limit is not None and self.limit <= self.fair_share

    def remaining_request(self) -> int:
        """What the queue could still take: requestable - fair share, never negative."""
        return max(0, self.requestable - self.fair_share)


def divide(total: int, queues: list[Share], k_value: float = 1.0) -> int:
    """Set `fair_share` of every sibling queue out of `total`; return what stays undivided.

    Phase 1 gives each queue min(deserved, requestable) even when that over-subscribes the total
    (R2.7, E1); phase 2 hands out what remains by queue priority buckets (R2.8, E6) in weighted
    whole-GPU rounds (R2.9, E3); leftovers go one GPU at a time to the largest remembered
    fractional offer, older queue first on ties (R2.10).
    """
    remaining = total
    for queue in queues:
        deserved = total if queue.deserved is None else queue.deserved
        queue.fair_share = min(deserved, queue.requestable)
        remaining -= queue.fair_share
    if remaining <= 0:
        return 0
    return _divide_over_quota(remaining, queues, k_value)


def _divide_over_quota(remaining: int, queues: list[Share], k_value: float) -> int:
    priorities = sorted({q.priority for q in queues}, reverse=True)
    leftovers: list[dict[str, tuple[float, Share]]] = []
    for priority in priorities:
        bucket = [q for q in queues if q.priority == priority]
        remaining, bucket_leftovers = _divide_up_to_fair_share(remaining, bucket, k_value)
        leftovers.append(bucket_leftovers)
    for bucket_leftovers in leftovers:
        if remaining <= 0:
            break
        remaining = _divide_remainders(remaining, bucket_leftovers)
    return remaining


def _share_weights(queues: list[Share], k_value: float) -> dict[str, float]:
    """Round weights w' = max(0, n + k(n - u)) of the unsatisfied queues (R2.9, E10)."""
    total_weight = sum(q.weight for q in queues if q.remaining_request() > 0)
    if total_weight == 0:
        return {}
    weights = {}
    for queue in queues:
        if queue.satisfied():
            continue
        normalised = queue.weight / total_weight
        weights[queue.name] = max(0.0, normalised + k_value * (normalised - queue.usage))
    return weights


def _divide_up_to_fair_share(
    remaining: int, queues: list[Share], k_value: float
) -> tuple[int, dict[str, tuple[float, Share]]]:
    """Weighted rounds inside one priority bucket (R2.9)."""
    leftovers: dict[str, tuple[float, Share]] = {}
    while True:
        weights = _share_weights(queues, k_value)
        weight_sum = sum(weights.values())
        if weight_sum == 0:
            break
        round_amount = remaining
        another_round = False
        for queue in queues:
            if remaining == 0:
                break
            if queue.satisfied() or queue.weight == 0:
                continue
            wanted = queue.remaining_request()
            offer = round_amount * weights[queue.name] / weight_sum
            give = _give(queue, wanted, offer, leftovers)
            if give == 0:
                continue
            queue.fair_share += give
            remaining -= give
            another_round = another_round or wanted < offer
        if not another_round or remaining == 0 or remaining == round_amount:
            break
    return remaining, leftovers


def _give(queue: Share, wanted: int, offer: float, leftovers: dict) -> int:
    """All that is wanted when the offer covers it, else the offer floored to whole GPUs (E3)."""
    if wanted <= offer:
        leftovers.pop(queue.name, None)
        return wanted
    give = math.floor(offer / UNIT) * UNIT
    if offer - give > 0:
        leftovers[queue.name] = (offer - give, queue)
    return give


def _divide_remainders(remaining: int, leftovers: dict[str, tuple[float, Share]]) -> int:
    """One GPU (or the last fraction) at a time, largest leftover first, older queue on ties."""
    ordered = sorted(leftovers.values(), key=lambda item: (-item[0], item[1].order, item[1].name))
    for _, queue in ordered:
        if remaining <= 0:
            break
        give = min(UNIT, remaining)
        queue.fair_share += give
        remaining -= give
    return remaining


def divide_tree(total: int, top: list[Share], k_value: float = 1.0) -> None:
    """Divide `total` among the top-level queues, then each queue's fair share among its
    children, recursively (R2.11: a department caps its projects)."""
    divide(total, top, k_value)
    for queue in top:
        if queue.children:
            divide_tree(queue.fair_share, queue.children, k_value)
