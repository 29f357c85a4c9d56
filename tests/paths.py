"""Where the tests find shared data: ../shared beside the repository (as CI has it), else the
copy under tests/fixtures/ so that a lone clone still runs every test."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def tr4858() -> Path:
    """The TR-4858 four-team scenario (../shared/scenarios/tr4858.json, or its copy)."""
    shared = SHARED / "scenarios" / "tr4858.json"
    return shared if shared.exists() else FIXTURES / "tr4858.json"
