"""Each file read and chunked in a worker process, within a time and a memory budget.

A PDF whose stream inflates to gigabytes, a YAML file of nested aliases, a workbook that never
ends, a library that hangs or crashes on one file: read in the ingest's own process, any of them
takes the ingest down or its memory up. Read here, the worker is what runs out
(``ingest.max_file_memory_mb``, an address-space limit set afresh in the worker for each file: the
memory it maps when the file starts plus the budget) or runs late (``ingest.max_file_seconds``:
the time the ingest waited on the file's reading, not the time it spent embedding what came
back). Then the worker and everything it started (Tesseract, a converter) are killed as one
process group, the file is one line in the report, a new worker takes the next file, and the
ingest goes on. A ``MemoryError`` raised in the worker, even one a library caught and wrapped,
counts as over the memory budget, never as a damaged file.

The worker is forked from the ingest (it starts in milliseconds, with the loaders, the chunkers
and the tokenizer already loaded) and kept while it stays within budget. It runs one task, a
generator given when it is made (the ingest's ``FileReader.events``), and sends back what the
task yields as it goes, so a large file comes back in parts and neither process holds it whole.
Where ``fork`` or address-space limits do not exist (Windows, macOS), tasks run in-process
(``InProcess``), as before, without the limits.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any

from ..errors import LoaderError, RagloomError

#: What a worker's task is: one item in, what it yields streamed back.
Task = Callable[[Any], Iterator[Any]]


class OverBudgetError(LoaderError):
    """A file whose reading went over the time or the memory budget (one line in the report)."""


#: Kept for code written against the earlier name.
ParseLimitError = OverBudgetError


def sandbox_supported() -> bool:
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def time_message(seconds: float) -> str:
    return (f"reading it took longer than {seconds:g} s (ingest.max_file_seconds) and was stopped; "
            "raise ingest.max_file_seconds to read it")


def memory_message(memory_mb: int) -> str:
    return (f"reading it needed more than {memory_mb:,} MB (ingest.max_file_memory_mb) and was stopped; "
            "raise ingest.max_file_memory_mb to read it")


class InProcess:
    """Runs the task in this process, without limits (where a worker cannot be forked)."""

    def __init__(self, task: Task) -> None:
        self.task = task

    def run(self, item: Any, seconds: float, memory_mb: int) -> Iterator[Any]:
        yield from self.task(item)

    def start(self) -> None:
        pass

    def interrupt(self) -> None:
        pass

    def close(self) -> None:
        pass


class FileWorker:
    """One forked worker process at a time that runs ``task`` under a per-item budget; ``close`` ends it."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self._pid: int | None = None
        self._conn: Connection | None = None

    def start(self) -> None:
        """Fork the worker now (else it is forked when the first item needs it)."""
        if self._pid is not None:
            return
        parent, child = multiprocessing.Pipe(duplex=True)
        ingest = os.getpid()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the worker; its coverage is not collected
            parent.close()
            code = 0
            try:
                _die_with(ingest)
                _serve(child, self.task)
            except BaseException:  # noqa: BLE001 - nothing of the ingest runs on in a worker
                code = 1
            os._exit(code)
        child.close()
        try:
            os.setpgid(pid, pid)  # also done in the worker: whichever runs first
        except OSError:
            pass
        self._pid, self._conn = pid, parent

    def run(self, item: Any, seconds: float, memory_mb: int) -> Iterator[Any]:
        """What the task yields for ``item``, as the worker sends it. OverBudgetError when the time
        waited for it passes ``seconds`` or the worker needs more than ``memory_mb``; an error the
        task raised is raised here."""
        self.start()
        conn = self._conn
        assert conn is not None
        finished = False
        try:
            conn.send((item, memory_mb))
            waited = 0.0
            while True:
                began = time.monotonic()
                if not conn.poll(max(seconds - waited, 0.0)):
                    self.kill()
                    raise OverBudgetError(time_message(seconds))
                try:
                    kind, payload = conn.recv()
                except (EOFError, OSError):
                    status = self.kill()
                    raise OverBudgetError(_died_message(status, memory_mb)) from None
                waited += time.monotonic() - began
                if kind == "event":
                    yield payload
                elif kind == "done":
                    finished = True
                    if payload:  # the worker grew while reading it: a fresh one takes the next file
                        self.close()
                    return
                elif kind == "memory":
                    self.kill()
                    raise OverBudgetError(memory_message(memory_mb))
                else:
                    finished = True
                    raise payload
        finally:
            if not finished:  # stopped midway (over budget, an error, the ingest interrupted)
                self.kill()

    def interrupt(self) -> None:
        """Kill the worker from another thread; the thread waiting on it sees it end (``run`` then
        reaps it)."""
        pid = self._pid
        if pid is not None:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass

    def kill(self) -> int | None:
        """End the worker and every process it started; its exit status, if known."""
        pid, conn = self._pid, self._conn
        self._pid = self._conn = None
        if pid is None:
            return None
        for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
            try:
                target()
            except OSError:
                continue
        status = _reap(pid)
        if conn is not None:
            conn.close()
        return status

    def close(self) -> None:
        """Let the worker end, then end whatever it left running."""
        pid, conn = self._pid, self._conn
        if pid is None:
            return
        try:
            assert conn is not None
            conn.send(None)
        except OSError:
            pass
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                self._pid = None  # reaped: its id may be reused, so no kill by it
                break
            time.sleep(0.01)
        try:
            os.killpg(pid, signal.SIGKILL)  # its children, if any outlived it
        except OSError:
            pass
        if self._pid is not None:
            self.kill()
        self._pid, self._conn = None, None
        if conn is not None:
            conn.close()


def _reap(pid: int) -> int | None:
    try:
        _, status = os.waitpid(pid, 0)
        return status
    except ChildProcessError:
        return None


def _died_message(status: int | None, memory_mb: int) -> str:
    how = ""
    if status is not None and os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        how = f" ({signal.Signals(number).name})" if number in signal.Signals._value2member_map_ else f" (signal {number})"
    return (f"the process reading it died{how}, perhaps out of memory (ingest.max_file_memory_mb is "
            f"{memory_mb:,} MB); raise ingest.max_file_memory_mb to try again, or leave the file out")


# -- in the worker ----------------------------------------------------------------------------------
#: A worker whose mapped memory grew by more than this share of the budget while reading a file is
#: replaced before the next one, so growth from earlier files never counts against later ones.
RETIRE_GROWTH = 0.5


#: ``prctl``'s option that asks the kernel for a signal when the parent ends (linux/prctl.h).
PR_SET_PDEATHSIG = 1


def _die_with(ingest: int) -> None:  # pragma: no cover - runs in the worker
    """Have the kernel kill this worker when the ingest's thread that forked it ends, however it
    ends (``kill -9``, the OOM killer): the ingest enforces the file's time budget, so a worker
    stuck in a file would otherwise outlive it. Every thread that forks a worker outlives its use
    (the ingest's own thread; the read-ahead thread, which ends after the last file is read)."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != ingest:  # the ingest was gone before the kernel was asked
        os._exit(1)


def _serve(conn: Connection, task: Task) -> None:  # pragma: no cover - runs in the worker
    os.setpgid(0, 0)  # its own process group: killed with every process it starts
    _quiet_signals()
    _release_inherited_locks()
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    started = _mapped_bytes()
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        item, memory_mb = message
        _limit_memory(memory_mb)
        try:
            for event in task(item):
                conn.send(("event", event))
        except BaseException as exc:  # noqa: BLE001 - sent to the ingest
            if caused_by(exc, MemoryError):
                del exc
                conn.send(("memory", None))
                return  # its heap may be in pieces: a fresh worker takes the next file
            conn.send(("error", _sendable(exc)))
            continue
        finally:
            _unlimit_memory()
        conn.send(("done", _mapped_bytes() - started > RETIRE_GROWTH * memory_mb * 1_000_000))


def caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``exc`` is, or was raised while handling or because of, an exception of ``kind``
    (a library that wraps a MemoryError in its own error still ran out of memory)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _sendable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a RagloomError (or LoaderError) with its message."""
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - any pickling failure
        cls = LoaderError if isinstance(exc, LoaderError) else RagloomError
        return cls(f"{type(exc).__name__}: {exc}")


def _quiet_signals() -> None:  # pragma: no cover - runs in the worker
    """The worker answers only to the ingest: a Ctrl-C is the ingest's to handle, and the ingest's
    signal wakeup pipe is not the worker's to write to."""
    try:
        signal.set_wakeup_fd(-1)
    except ValueError:
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _release_inherited_locks() -> None:
    """In the worker: let go of the file locks it inherited from the ingest.

    A forked child shares its parent's open files, and a ``flock`` belongs to the open file, not to
    the process. tantivy takes its meta lock on a background thread (a reader reloading) and lets it
    go by closing its file; when the fork happened while the lock was held, the worker's copy kept
    it, and the ingest's next commit waited for it forever. Each such descriptor is pointed at
    /dev/null (not closed, so its number is never reused for a file the worker opens).
    """
    fds = [int(name) for name in os.listdir("/proc/self/fdinfo") if name.isdigit()]
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        for fd in fds:
            if fd != null and _holds_lock(fd):
                os.dup2(null, fd)
    finally:
        os.close(null)


def _holds_lock(fd: int) -> bool:
    try:
        with open(f"/proc/self/fdinfo/{fd}", encoding="ascii", errors="replace") as info:
            return any(line.startswith("lock:") and ("FLOCK" in line or "OFDLCK" in line) for line in info)
    except OSError:  # closed meanwhile, or not ours to read
        return False


def _limit_memory(memory_mb: int) -> None:
    """In the worker: an address-space limit of what it maps now plus ``memory_mb``."""
    import resource

    limit = _mapped_bytes() + memory_mb * 1_000_000
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _unlimit_memory() -> None:
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def _mapped_bytes() -> int:
    """This process's virtual memory size (``VmSize``), in bytes."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


class ParserSandbox:
    """Documents of one file loaded in a ``FileWorker`` (what the ingest used before it read and
    chunked every file there; kept for callers that only load)."""

    def __init__(self, memory_mb: int, timeout_s: float) -> None:
        from .loaders import load_file

        self.memory_mb = memory_mb
        self.timeout_s = timeout_s
        self._worker = FileWorker(lambda job: iter([load_file(*job)]))

    def load(self, path: Any, source: str, data: bytes | None, options: Any) -> Any:
        return list(self._worker.run((path, source, data, options), self.timeout_s, self.memory_mb))[0]

    def close(self) -> None:
        self._worker.close()
