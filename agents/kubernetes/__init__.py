"""The Kubernetes agent (Step 6): Allot's plan carried out as pods on a real cluster.

So far: `manifests`, the objects it sends, each checked against the official schema in the
tests. The agent that sends them (inventory, start/stop, watch, logs, exec) is next.
"""
