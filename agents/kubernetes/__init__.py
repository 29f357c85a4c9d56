"""The Kubernetes agent (Step 6): Allot's plan carried out as pods on a real cluster.

- `manifests`: the objects it sends (pure functions, each checked against the official schema
  in the tests);
- `inventory`: the GPU nodes and the client's credentials; `pods`: start all or nothing, stop,
  Services and Ingresses; `addresses`: NodePort and LoadBalancer URLs;
- `faults`: what a failed API call means (unreachable, transient, setting up, permanent) and
  the per-job back-off; `sweep`: Services and Ingresses reconciled both ways;
- `watch`: the pod cache (list, watch, relist on 410 Gone); `status`: pod phases to job phases;
- `dcgm`: GPU utilization from NVIDIA's DCGM exporter; `shell`: the exec stream for `allot bash`;
- `sessions`: Launch Jupyter's notebook pods behind the portal's session proxy;
- `agent.KubernetesAgent`: all of it behind the agent interface of `agents.base`.
"""
