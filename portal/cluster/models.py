"""Nodes: `gpus` identical devices (indexes 0..gpus-1) of `gpu_memory_bytes` each."""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from portal.core.validators import validate_dns_label, validate_dns_subdomain

MAX_GPUS_PER_NODE = 64


class Node(models.Model):
    """A GPU node in node pool `pool`.

    A node that is not `ready` adds nothing to the cluster (R2.6); a node that is not
    `schedulable` (cordoned) keeps its pods but takes no new ones. Its devices are numbered
    0..gpus-1; which job holds which device is recorded in `Job.placement`.
    """

    name = models.CharField(max_length=253, unique=True, validators=[validate_dns_subdomain])
    gpus = models.PositiveSmallIntegerField(
        validators=[MinValueValidator(0), MaxValueValidator(MAX_GPUS_PER_NODE)]
    )
    gpu_memory_bytes = models.PositiveBigIntegerField(
        default=32 * 2**30, validators=[MinValueValidator(1)]
    )
    pool = models.CharField(max_length=63, default="default", validators=[validate_dns_label])
    ready = models.BooleanField(default=True)
    schedulable = models.BooleanField(default=True)  # an admin's cordon in Allot
    # What a real cluster reports (the Kubernetes agent syncs these each observation): the GPU
    # model from GPU feature discovery, and a cordon made in the cluster (`kubectl cordon`).
    gpu_product = models.CharField(max_length=128, blank=True, default="")
    cordoned_in_cluster = models.BooleanField(default=False)
    # Allocatable CPU (millicores) and memory (bytes, issue 33) for pods (issue 26): set by
    # admins for the simulated cluster, read from the node's status.allocatable on Kubernetes;
    # None = not tracked (never the limiting resource).
    cpu_millis = models.PositiveIntegerField(null=True, blank=True)
    memory_bytes = models.PositiveBigIntegerField(null=True, blank=True)
    # GPU device indexes out of service, as the two cordons: marked by an admin in Allot
    # (`failed_devices`; the simulated cluster's way) and found by the Kubernetes inventory
    # (`failed_in_cluster`: allocatable nvidia.com/gpu dropped below capacity, or an unhealthy
    # GPU condition). The scheduler never places on either and evicts what runs there.
    failed_devices = models.JSONField(default=list, blank=True)
    failed_in_cluster = models.JSONField(default=list, blank=True)
    # What live pods Allot did not place hold here (other schedulers, DaemonSets, static pods;
    # issue 33), as the Kubernetes agent sums their requests each observation: the scheduler
    # places nothing on that room (R2.6) and the overview shows it as used outside Allot.
    outside_gpus = models.PositiveSmallIntegerField(default=0)
    outside_cpu_millis = models.PositiveIntegerField(default=0)
    outside_memory_bytes = models.PositiveBigIntegerField(default=0)
    # The node's labels (issue 38): read from the cluster by the Kubernetes agent each
    # observation, set by admins for the simulated cluster. Its pool's topology levels
    # (`PoolTopology`) name the labels that group nodes into racks, blocks, NVLink domains (R23.1).
    labels = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def takes_new_pods(self) -> bool:
        """False when cordoned in Allot or in the cluster."""
        return self.schedulable and not self.cordoned_in_cluster

    @property
    def out_of_service(self) -> list[int]:
        """Device indexes failed by an admin's mark or the cluster's report, in order."""
        both = {*self.failed_devices, *self.failed_in_cluster}
        return sorted(index for index in both if 0 <= index < self.gpus)

    @property
    def healthy_gpus(self) -> int:
        """Devices that are not failed."""
        return self.gpus - len(self.out_of_service)


class PoolTopology(models.Model):
    """A node pool's topology levels (issue 38, R23.1): node label keys, widest domain first
    (e.g. example.com/block, example.com/rack, kubernetes.io/hostname), as KAI's and Kueue's
    `Topology` resources list them. A pool without a row has no levels."""

    pool = models.CharField(max_length=63, unique=True, validators=[validate_dns_label])
    levels = models.JSONField(default=list)
    # The constraint a gang that may only run in this pool gets when neither its submission
    # nor its project names one (issue 38): one of `levels` (key or short name), "" for none.
    default_required = models.CharField(max_length=317, blank=True, default="")
    default_preferred = models.CharField(max_length=317, blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pool"]

    def __str__(self) -> str:
        return f"{self.pool}: {' > '.join(self.levels)}"
