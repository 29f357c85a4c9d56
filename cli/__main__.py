"""`python -m cli` and the `allot` entry point."""

from .commands import cli


def main() -> None:
    """Run the command line."""
    cli(prog_name="allot")


if __name__ == "__main__":
    main()
