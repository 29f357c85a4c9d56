"""The actions of a cycle in KAI's default order (R1.1): allocate, consolidation, reclaim,
preempt."""
