"""Tools built on Allot's scheduling core: scenario replay, benchmark and trace simulator.

- ``python -m scheduler_tools.replay FILE [-v]``: replay a scenario file and check it
  (:mod:`scheduler_tools.scenario` loads and checks the files).
- ``python -m scheduler_tools.bench``: time the core on KAI's scale-test shapes.
- ``python -m scheduler_tools.simulate TRACE.csv``: replay a job trace in virtual time.

They import the core (``scheduler``), the standard library and plotly (the simulator's HTML
report); the core never imports them, so it stays standard library only with no exception, and
neither ``portal`` nor ``agents`` is imported here (pyproject's import-linter contracts).
"""
