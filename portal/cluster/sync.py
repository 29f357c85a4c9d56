"""Node rows kept in step with what a real cluster reports (the Kubernetes agent's inventory).

Each observation that carries an inventory (`NodeStatus.gpus` set) creates the GPU nodes Allot
has not seen, updates GPU count, model, memory, pool, readiness and the cluster's cordon, and
marks not ready the nodes the cluster no longer lists (they are kept: jobs' history names them,
and an admin deletes them). The simulated agent reports no inventory, so nothing changes there.
An admin's cordon in Allot (`schedulable`) is never touched: the two cordons add up. So with
failed devices (issue 26): the inventory's go to `failed_in_cluster`, an admin's marks in
`failed_devices` stay; allocatable CPU and memory are the cluster's, and so is what pods Allot did
not place hold on each node (`outside_*`, issue 33), and its labels (issue 38: racks, blocks).
"""

from __future__ import annotations

from agents.base import NodeStatus
from portal.cluster.models import MAX_GPUS_PER_NODE, Node


def sync_nodes(reported: tuple[NodeStatus, ...]) -> bool:
    """Make the Node rows match the inventory in `reported`; True when a row changed."""
    seen = {node.name: node for node in reported if node.gpus is not None}
    if not seen:
        return False
    changed = False
    rows = {row.name: row for row in Node.objects.all()}
    for name, node in seen.items():
        fields = {
            "gpus": min(node.gpus, MAX_GPUS_PER_NODE),
            "gpu_product": node.gpu_product[:128],
            "pool": node.pool or "default",
            "ready": node.ready,
            "cordoned_in_cluster": not node.schedulable,
        }
        if node.gpu_memory_bytes:
            fields["gpu_memory_bytes"] = node.gpu_memory_bytes
        fields |= _resources(node)
        row = rows.get(name)
        if row is None:
            Node.objects.create(name=name, **fields)
            changed = True
        elif any(getattr(row, key) != value for key, value in fields.items()):
            Node.objects.filter(pk=row.pk).update(**fields)
            changed = True
    gone = [row.pk for name, row in rows.items() if name not in seen and row.ready]
    if gone:
        Node.objects.filter(pk__in=gone).update(ready=False)
        changed = True
    return changed


def _resources(node: NodeStatus) -> dict:
    """Allocatable CPU and memory and the failed devices, where the inventory reports them."""
    fields = {}
    if node.cpu_millis is not None:
        fields["cpu_millis"] = node.cpu_millis
    if node.memory_bytes is not None:
        fields["memory_bytes"] = node.memory_bytes
    if node.failed_devices is not None:
        fields["failed_in_cluster"] = list(node.failed_devices)
    if node.labels is not None:  # issue 38: the topology levels read them (R23.1)
        fields["labels"] = dict(node.labels)
    fields["outside_gpus"] = min(max(node.outside_gpus, 0), MAX_GPUS_PER_NODE)
    fields["outside_cpu_millis"] = max(node.outside_cpu_millis, 0)
    fields["outside_memory_bytes"] = max(node.outside_memory_bytes, 0)
    return fields
