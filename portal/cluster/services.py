"""Writes to nodes; each change asks for a scheduling cycle."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from portal.audit import services as audit
from portal.cluster.models import Node, PoolTopology
from portal.core.errors import conflict
from portal.core.trigger import request_cycle_on_commit
from portal.jobs.models import HOLDING, Job


def jobs_on(node_name: str) -> list[Job]:
    """The jobs holding devices of node `node_name`."""
    holding = Job.objects.filter(status__in=HOLDING).select_related("project")
    return [job for job in holding if node_name in job.nodes]


def highest_device_in_use(node_name: str) -> int:
    """The highest device index a job holds on the node, or -1 when none is held."""
    devices = [
        device
        for job in jobs_on(node_name)
        for pod in job.placed_pods
        if pod.node == node_name
        for device in pod.devices
    ]
    return max(devices, default=-1)


def create_node(**fields) -> Node:
    """A new node; 409 when the name is taken."""
    name = fields["name"]
    try:
        with transaction.atomic():
            if Node.objects.filter(name=name).exists():
                raise conflict("name", f"a node named {name!r} already exists")
            node = Node.objects.create(**fields)
            audit.record("node.created", node, changes=audit.diff({}, fields))
            request_cycle_on_commit()
    except IntegrityError:
        raise conflict("name", f"a node named {name!r} already exists") from None
    return node


def update_node(node: Node, **fields) -> Node:
    """Change a node; 409 when it would drop devices that jobs hold."""
    with transaction.atomic():
        if "gpus" in fields and fields["gpus"] <= highest_device_in_use(node.name):
            raise conflict("gpus", f"jobs hold device {highest_device_in_use(node.name)}")
        before = audit.snapshot(node, fields)
        for key, value in fields.items():
            setattr(node, key, value)
        node.save()
        audit.record_changes(node, before, {"node.changed": None})  # cordon, pool, GPUs, ...
        request_cycle_on_commit()
    return node


def delete_node(node: Node) -> None:
    """Remove a node no job runs on (409 otherwise: delete or wait for those jobs)."""
    with transaction.atomic():
        busy = jobs_on(node.name)
        if busy:
            names = ", ".join(str(job) for job in busy[:5])
            raise conflict("name", f"jobs run on {node.name}: {names}")
        audit.record("node.deleted", node)
        node.delete()
        request_cycle_on_commit()


def set_pool_topology(
    pool: str, levels: list[str], default_required: str = "", default_preferred: str = ""
) -> PoolTopology:
    """Give node pool `pool` its topology levels, widest first (issue 38, R23.1), and the
    constraint its gangs get when they name none, replacing what it had; the next cycle places
    by them."""
    after = {"levels": levels, "default_required": default_required,
             "default_preferred": default_preferred}  # fmt: skip
    with transaction.atomic():
        row, created = PoolTopology.objects.select_for_update().get_or_create(
            pool=pool, defaults=after
        )
        before = {key: ([] if key == "levels" else "") if created else getattr(row, key)
                  for key in after}  # fmt: skip
        for key, value in after.items():
            setattr(row, key, value)
        row.save()
        audit.record("topology.changed", row, changes=audit.diff(before, after))
        request_cycle_on_commit()
    return row


def delete_pool_topology(row: PoolTopology) -> None:
    """Take a pool's levels away: its nodes form no domains and a job that requires a level
    waits (R23.4)."""
    with transaction.atomic():
        audit.record("topology.deleted", row)
        row.delete()
        request_cycle_on_commit()
