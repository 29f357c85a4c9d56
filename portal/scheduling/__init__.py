"""The scheduling cycle: snapshot the database, plan with `scheduler`, commit, tell the agent.

`cycle.run_cycle` is the one code path; the Celery task (`tasks.run_cycle`), the embedded timer
thread (`embedded`) and `POST /api/v1/scheduler/cycles/` (`settle`) all call it.
"""
