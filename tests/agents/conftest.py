"""The session fixtures (`session_python`, `sessions_dir`, `make_sessions`) live in
tests/conftest.py: the portal's cycle and browser tests start sessions too."""
