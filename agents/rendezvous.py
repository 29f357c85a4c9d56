"""The environment a distributed job's pods rendezvous by (issue 33), wherever they run.

Each pod of a job of several pods gets the variables that `torchrun` and `torch.distributed`
read (`MASTER_ADDR`, `MASTER_PORT`, `WORLD_SIZE`, `RANK`) and the ones Kubeflow Trainer v2 sets
for torchrun's options (`PET_NNODES`, `PET_NODE_RANK`, `PET_MASTER_ADDR`, `PET_MASTER_PORT`,
`PET_NPROC_PER_NODE`), so `torchrun train.py` with no options, or with the usual
`--nnodes $WORLD_SIZE --node_rank $RANK`, finds its peers. As in Kubeflow's PyTorchJob, the
world is the pods (a pod is a torchrun node): `WORLD_SIZE` is the number of pods and `RANK` =
`NODE_RANK` is the pod's index. MPI-style tools get the host list: `ALLOT_HOSTS`, every pod's
address in rank order, comma-separated.

Where the addresses come from is the agent's: pod DNS names through a headless Service under
Kubernetes (`agents.kubernetes.manifests`), 127.0.0.1 for the local processes of the embedded
default (`agents.processes`).
"""

from __future__ import annotations

from agents.base import JobSpec

DEFAULT_PORT = 29500  # torch.distributed's default master port
PORT_VARIABLE = "MASTER_PORT"  # a job may set its own; every other name below is Allot's
NAMES = frozenset({
    "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "NODE_RANK", "PET_NNODES",
    "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT", "PET_NPROC_PER_NODE", "ALLOT_HOSTS",
})  # fmt: skip


def master_port(job: JobSpec, default: int = DEFAULT_PORT) -> str:
    """The job's own `MASTER_PORT` when it sets a valid one, else `default`."""
    value = dict(job.environment).get(PORT_VARIABLE, "")
    if value.isdigit() and 0 < int(value) < 65536:
        return value
    return str(default)


def environment(job: JobSpec, index: int, hosts: list[str], slots: int = 1,
                port: str | None = None) -> dict[str, str]:  # fmt: skip
    """The rendezvous variables of pod `index` of `job`, whose pods answer at `hosts` (rank
    order; pod 0 is the master). `slots`: the processes torchrun starts in this pod (its
    GPUs). `port`: the master's port (default: `master_port`)."""
    port = port or master_port(job)
    rank = str(index)
    return {
        "MASTER_ADDR": hosts[0],
        "MASTER_PORT": port,
        "WORLD_SIZE": str(len(hosts)),
        "RANK": rank,
        "NODE_RANK": rank,
        "PET_NNODES": str(len(hosts)),
        "PET_NODE_RANK": rank,
        "PET_MASTER_ADDR": hosts[0],
        "PET_MASTER_PORT": port,
        "PET_NPROC_PER_NODE": str(max(1, slots)),
        "ALLOT_HOSTS": ",".join(hosts),
    }
