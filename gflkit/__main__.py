"""``python -m gflkit``: the ``gflkit`` command, for when the script is not on PATH.

The command line is imported here only, never by ``import gflkit``.
"""
from __future__ import annotations


def main() -> None:
    """Run the ``gflkit`` Click group with the process arguments."""
    from gflkit_cli.main import cli

    cli(prog_name="gflkit")


if __name__ == "__main__":
    main()
