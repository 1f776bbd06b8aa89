"""``python -m gflkit``: the ``gflkit`` command, for when the script is not on PATH.

The command line is imported here only, never by ``import gflkit``.
"""
from __future__ import annotations

import os
import sys


def _torchrun_rank() -> bool:
    """Whether this process is one rank of a ``torchrun`` launch (``RANK`` and ``WORLD_SIZE`` > 1)."""
    return "RANK" in os.environ and os.environ.get("WORLD_SIZE", "1").strip() not in ("", "0", "1")


def main() -> None:
    """Run the ``gflkit`` Click group with the process arguments, the process configured as the command does.

    The allocator settings of :func:`gflkit_cli.process.configure_process` come
    first, before anything allocates a tensor. A ``torchrun`` rank leaves at
    once when the command is over, as the ranks of ``--nproc`` do
    (:func:`gflkit.interrupts.leave_now`).
    """
    from gflkit_cli.main import cli
    from gflkit_cli.process import configure_process

    from .interrupts import leave_now

    configure_process()

    try:
        cli(prog_name="gflkit")
    except SystemExit as done:
        if not _torchrun_rank():
            raise
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        if not isinstance(done.code, (int, type(None))):
            print(done.code, file=sys.stderr)
        leave_now(code)


if __name__ == "__main__":
    main()
