"""Ctrl-C stops a long-running command within seconds, whatever its threads are doing.

Python turns SIGINT into KeyboardInterrupt in the main thread, but only once that thread runs
Python code again: while it waits in native code (a model run, a write, a join on a thread that
waits for it) or while worker threads hold the process open at exit, a Ctrl-C can seem to do
nothing. ``stops_on_ctrl_c`` keeps the usual KeyboardInterrupt (so the command cleans up, and an
ingest stops between two sources) and adds a watchdog that does not depend on the main thread:
the signal's wakeup byte reaches a thread of its own, which gives the process ``grace`` seconds to
finish and then ends it (status 130). A second Ctrl-C ends it at once. An index stays consistent
either way: every source is written in one transaction.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: How long a command may take to stop after Ctrl-C before the process is ended.
GRACE_SECONDS = 10.0


def _end_process() -> None:
    os.write(2, b"interrupted\n")  # a raw write: no lock a stuck thread might hold
    os._exit(130)


@contextmanager
def stops_on_ctrl_c(grace: float = GRACE_SECONDS, terminate: bool = False) -> Iterator[None]:
    """While the block runs, Ctrl-C ends the process within ``grace`` seconds (see the module);
    with ``terminate``, SIGTERM does the same (and raises KeyboardInterrupt, as Ctrl-C does)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handled = (signal.SIGINT, signal.SIGTERM) if terminate else (signal.SIGINT,)
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    previous_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    previous_handlers = {number: signal.signal(number, signal.default_int_handler) for number in handled}
    def watch() -> None:
        interrupts, ending = 0, None
        while data := os.read(read_end, 64):  # empty once the block is left and the pipe closed
            interrupts += sum(data.count(bytes([number])) for number in handled)
            if interrupts >= 2:
                _end_process()
            if interrupts == 1 and ending is None:
                ending = threading.Timer(grace, _end_process)
                ending.daemon = True  # runs on at exit too, while the interpreter joins threads
                ending.start()
        os.close(read_end)

    threading.Thread(target=watch, name="ragloom-ctrl-c", daemon=True).start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous_fd)
        for number, handler in previous_handlers.items():
            signal.signal(number, handler)
        os.close(write_end)  # the watcher's read returns: it ends (a timer already set does not)
