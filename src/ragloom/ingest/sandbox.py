"""Documents parsed in a worker process with a memory and a time limit.

A PDF whose stream inflates to gigabytes, a workbook that never ends, a library that hangs or
crashes on one file: parsed in the ingest's own process, any of them takes the ingest down or
its memory up. Parsed here, the worker is what runs out (``ingest.parse_memory_mb``, an address
space limit set in the worker) or runs late (``ingest.parse_timeout_s``, then the worker is
killed); the file is one line in the report, a new worker takes the next file, and the ingest
goes on.

The worker is forked from the ingest (it starts in milliseconds, with the loaders imported) and
kept for the files of one ingest. Its limit is the memory it already maps plus
``parse_memory_mb``. Where ``fork`` or address-space limits do not exist (Windows, macOS), files
are parsed in-process, as before.
"""

from __future__ import annotations

import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor, TimeoutError
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from ..errors import LoaderError
from .loaders import LoaderOptions, LoadResult, load_file


class ParseLimitError(LoaderError):
    """A file whose parsing went over the memory or time limit (one line in the report)."""


def sandbox_supported() -> bool:
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


class ParserSandbox:
    """One worker process at a time that loads files under limits; ``close`` ends it."""

    def __init__(self, memory_mb: int, timeout_s: float) -> None:
        self.memory_mb = memory_mb
        self.timeout_s = timeout_s
        self._pool: ProcessPoolExecutor | None = None

    def load(self, path: Path, source: str, data: bytes, options: LoaderOptions) -> LoadResult:
        pool = self._worker()
        future = pool.submit(load_file, path, source, data, options)
        try:
            return future.result(timeout=self.timeout_s)
        except TimeoutError:
            self._kill()
            raise ParseLimitError(
                f"{source}: parsing took longer than {self.timeout_s:g} s and was stopped; "
                "raise ingest.parse_timeout_s to read it") from None
        except MemoryError:
            self._kill()
            raise ParseLimitError(self._memory_message(source)) from None
        except BrokenProcessPool:
            self._kill()
            raise ParseLimitError(f"{source}: the parser process died on it ({self._memory_message('')})") from None

    def _memory_message(self, source: str) -> str:
        where = f"{source}: " if source else ""
        return (f"{where}parsing needed more than {self.memory_mb:,} MB and was stopped; "
                "raise ingest.parse_memory_mb to read it")

    def _worker(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"),
                                             initializer=_start_worker, initargs=(self.memory_mb,))
        return self._pool

    def _kill(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        for process in list(getattr(pool, "_processes", {}).values()):
            process.kill()
        pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _start_worker(memory_mb: int) -> None:
    _release_inherited_locks()
    _limit_memory(memory_mb)


def _release_inherited_locks() -> None:
    """In the worker: let go of the file locks it inherited from the ingest.

    A forked child shares its parent's open files, and a ``flock`` belongs to the open file, not to
    the process. tantivy takes its meta lock on a background thread (a reader reloading) and lets it
    go by closing its file; when the fork happened while the lock was held, the worker's copy kept
    it, and the ingest's next commit waited for it forever. Each such descriptor is pointed at
    /dev/null (not closed, so its number is never reused for a file the worker opens).
    """
    import os

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

    mapped = _mapped_bytes()
    limit = mapped + memory_mb * 1_000_000
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _mapped_bytes() -> int:
    """This process's virtual memory size (``VmSize``), in bytes."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0
