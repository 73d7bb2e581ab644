"""Ctrl-C ends a command even when a thread of its own, or the interpreter's exit, would hold it open."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import pytest

#: The command's body: a thread that never ends (a worker the interrupt does not reach), and a
#: main thread that swallows the first KeyboardInterrupt and keeps waiting, as a stuck join would.
STUCK = textwrap.dedent("""
    import sys, threading, time
    from ragloom.cli.interrupt import stops_on_ctrl_c

    threading.Thread(target=time.sleep, args=(3600,)).start()  # not a daemon: exit would wait for it
    ready = False
    with stops_on_ctrl_c(grace=float(sys.argv[1])):
        while True:
            try:  # "ready" is said inside the try: a Ctrl-C that follows it lands here
                if not ready:
                    ready = True
                    print("ready", flush=True)
                time.sleep(3600)
            except KeyboardInterrupt:
                if sys.argv[2] == "leave":
                    break
""")


def _started(grace: float, then: str) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", STUCK, str(grace), then], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "ready"
    return process


@pytest.mark.parametrize("then", ["leave", "stay"])
def test_ctrl_c_ends_the_process_after_the_grace_even_when_something_holds_it(then):
    """``leave``: the block is left, and the interpreter's exit waits on the thread; ``stay``: the
    main thread never gets out. Either way the process ends, with status 130, after the grace."""
    process = _started(1.0, then)
    process.send_signal(signal.SIGINT)
    _, errors = process.communicate(timeout=60)
    assert process.returncode == 130 and "interrupted" in errors


def test_a_second_ctrl_c_ends_it_at_once():
    process = _started(3600.0, "stay")  # a grace nobody waits for
    process.send_signal(signal.SIGINT)
    time.sleep(0.5)  # the first one is read, and a timer set
    process.send_signal(signal.SIGINT)
    _, errors = process.communicate(timeout=60)
    assert process.returncode == 130 and "interrupted" in errors


def test_outside_the_block_the_signal_handling_is_as_before():
    import threading

    from ragloom.cli.interrupt import stops_on_ctrl_c

    before = signal.getsignal(signal.SIGINT)
    with stops_on_ctrl_c():
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGINT) is before
    assert signal.set_wakeup_fd(-1) == -1  # no wakeup descriptor left behind
    ran = []
    worker = threading.Thread(target=lambda: ran.append(stops_on_ctrl_c().__enter__() is None))
    worker.start()
    worker.join()
    assert ran == [True]  # outside the main thread it does nothing, and says nothing
