"""Ctrl-C delivered only where Python can raise it.

A ``KeyboardInterrupt`` raised while an extension module (torch, DGL) is being
imported can cross one of its C++ frames, which then aborts the process
(SIGABRT); raised inside a weak-reference callback or a finaliser, Python
prints it as "Exception ignored" with a traceback and carries on. The handler
here records such a Ctrl-C and delivers it again shortly, until it arrives
where raising is safe. It is installed by gflkit's own entry points (the
command line and the processes of ``--nproc``), never by the library on its
caller's process.
"""
from __future__ import annotations

import _thread
import logging
import os
import signal
import sys
import threading
import weakref

__all__ = []

#: A Ctrl-C that arrived where it could not be raised and is still to be delivered.
pending = threading.Event()
#: The signals received (a Ctrl-C cut an import short when this is not empty).
received: list[int] = []


def unsafe(frame) -> bool:
    """Whether raising in ``frame`` could abort the process or be swallowed with a traceback."""
    while frame is not None:
        code = frame.f_code
        if code.co_filename.startswith("<frozen importlib") or code.co_filename == weakref.__file__ \
                or code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def _redeliver() -> None:
    if pending.is_set():
        _thread.interrupt_main()


def on_sigint(signum, frame) -> None:
    """SIGINT handler: ``KeyboardInterrupt`` where it is safe, else later (see the module)."""
    received.append(signum)
    if unsafe(frame):
        pending.set()
        timer = threading.Timer(0.05, _redeliver)
        timer.daemon = True
        timer.start()
        return
    pending.clear()
    raise KeyboardInterrupt


def set_sigint(handler) -> None:
    """Install ``handler`` for SIGINT; off the main thread, leave signals alone."""
    try:
        signal.signal(signal.SIGINT, handler)
    except ValueError:
        pass


def leave_now(code: int) -> None:
    """End one of gflkit's own processes (a rank) at once with ``code``, logs and streams flushed.

    Going through the interpreter's shutdown instead ran native destructors
    while library threads were still alive, and a rank then sometimes died of
    SIGABRT ("terminate called without an active exception") after its work
    was done.
    """
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
