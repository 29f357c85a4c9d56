"""`python -m scheduler_tools.replay FILE [-v]`: replay a scenario file and check its expectations.

Exit 0 when every expectation holds, 1 when one fails, 2 when the file is not a valid scenario.
"""

from __future__ import annotations

import argparse
import sys

from .scenario import (
    ReplayResult,
    ScenarioError,
    load_scenario,
    print_result,
    replay,
    replay_file,
)

__all__ = ["ReplayResult", "main", "replay_file"]


def main(argv: list[str] | None = None) -> int:
    """Replay each file; print the tables after every `expect` step and one line per failure."""
    parser = argparse.ArgumentParser(prog="python -m scheduler_tools.replay", description=__doc__)
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every decision")
    args = parser.parse_args(argv)
    status = 0
    for path in args.files:
        try:
            scenario = load_scenario(path)
            result = replay(scenario, verbose=args.verbose)
        except (ScenarioError, TypeError, KeyError, ValueError) as exc:
            print(f"{path}: not a valid scenario: {exc}", file=sys.stderr)
            return 2
        status = max(status, print_result(scenario, path, result))
    return status


if __name__ == "__main__":
    sys.exit(main())
