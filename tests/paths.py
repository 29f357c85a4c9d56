"""Where the tests find shared data: ../shared beside the repository (as CI has it), else the
repository's own copy (scenarios/, the one `make replay` and the docs use), so that a lone clone
still runs every test; tests/test_readme.py checks that the two copies are the same bytes."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
SCENARIOS = ROOT / "scenarios"


def tr4858() -> Path:
    """The TR-4858 four-team scenario (../shared/scenarios/tr4858.json, or scenarios/'s copy)."""
    shared = SHARED / "scenarios" / "tr4858.json"
    return shared if shared.exists() else SCENARIOS / "tr4858.json"
