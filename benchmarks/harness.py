"""The one harness every benchmark runs through (asv's and pyperf's shape, made small).

``python -m benchmarks NAME [ARGS]`` runs ``NAME``'s ``main()`` inside a :class:`Run`: the machine,
the load average before and after, the git commit, the date, the arguments, the wall time, the
peak memory of the whole process tree and everything the benchmark printed go into one JSON file
in ``benchmarks/results/runs/``; what the benchmark passes to :func:`record` goes in as its
metrics. ``python -m benchmarks report`` renders Markdown tables from such files.

A benchmark uses the rest: the shared paths, :func:`load_average`, :class:`Timer`,
:class:`TreeMemory` / :func:`peak_rss_mb`, and the server helpers (:func:`free_port`,
:func:`start_ragloom`, :func:`wait_healthy`, :func:`command` for a benchmark's own worker process).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent
REPO = BENCHMARKS.parent
RESULTS = BENCHMARKS / "results"
RUNS = RESULTS / "runs"
CONFIGS = BENCHMARKS / "configs"
#: The shared BEIR-layout datasets (``../shared/datasets`` beside the repository), or $RAGLOOM_DATASETS.
DATASETS = Path(os.environ.get("RAGLOOM_DATASETS") or REPO.parent / "shared" / "datasets")
SCIFACT = DATASETS / "scifact"
XQUAD = DATASETS / "xquad-dev"

#: Set in every process a run starts, so that a benchmark's own worker processes record nothing.
PARENT_RUN = "BENCHMARKS_PARENT_RUN"


# -- the machine and its load ---------------------------------------------------------------------
def load_average() -> float:
    """The 1-minute load average: how busy the machine was (nan where the OS has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return float("nan")


def machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
            "processor": platform.machine(), "memory_mb": _total_memory_mb()}


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def _total_memory_mb() -> float | None:
    with contextlib.suppress(OSError, StopIteration, ValueError):
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            return round(next(int(line.split()[1]) for line in meminfo if line.startswith("MemTotal:")) / 1024)
    return None


# -- timers ---------------------------------------------------------------------------------------
class Timer:
    """``with Timer() as t: ...`` then ``t.seconds`` (perf_counter; readable inside the block too)."""

    def __enter__(self) -> Timer:
        self.started = time.perf_counter()
        self.ended: float | None = None
        return self

    def __exit__(self, *exc: object) -> None:
        self.ended = time.perf_counter()

    @property
    def seconds(self) -> float:
        return (self.ended or time.perf_counter()) - self.started


# -- memory ---------------------------------------------------------------------------------------
def peak_rss_mb() -> float:
    """This process's own peak resident memory (VmHWM). Not getrusage: Linux carries ru_maxrss over
    exec, so a worker process would report its parent's peak."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    import resource

    scale = 1024 * 1024 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale


def children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (Linux /proc; empty elsewhere)."""
    direct: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                direct += [int(p) for p in (task / "children").read_text().split()]
    return direct + [grandchild for child in direct for grandchild in children(child)]


def memory_kb(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in KiB, (0, 0) when it is gone or unreadable."""
    rss = pss = 0
    with contextlib.suppress(OSError, ValueError):
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
            for line in rollup:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    return rss, pss


def rss_kb(pid: int) -> int:
    """RSS of one process in KiB (0 when it is gone), from /proc/PID/status: cheap enough to sample
    ten times a second. ``memory_kb`` walks every mapping for PSS and cost ~0.4 of a core at that rate
    beside a 1-2 GB ingest."""
    with contextlib.suppress(OSError, ValueError, StopIteration):
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return 0


def tree_rss_mb(pid: int) -> float:
    """The resident memory of ``pid`` and all its descendants now (MB)."""
    return sum(rss_kb(p) for p in [pid, *children(pid)]) / 1024


class TreeMemory:
    """Samples the summed RSS and PSS (MB) of a process and all its descendants, in a thread."""

    def __init__(self, pid: int | None = None, every: float = 0.1) -> None:
        self.pid, self.every = pid or os.getpid(), every
        self.peak_rss = self.peak_pss = 0.0
        self.most_processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            if not Path(f"/proc/{self.pid}").exists():
                break
            tree = [self.pid, *children(self.pid)]
            rss = pss = 0
            for pid in tree:
                rss_kb, pss_kb = memory_kb(pid)
                rss += rss_kb
                pss += pss_kb
            self.peak_rss = max(self.peak_rss, rss / 1024)
            self.peak_pss = max(self.peak_pss, pss / 1024)
            self.most_processes = max(self.most_processes, len(tree))
            self._stop.wait(self.every)


# -- processes and servers ------------------------------------------------------------------------
def command(name: str, *args: str) -> list[str]:
    """The command that runs benchmark ``name`` in a new process (for a benchmark's own workers)."""
    return [sys.executable, "-m", "benchmarks", name, *args]


def ragloom_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "ragloom", *args]


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clean_env(settings: dict[str, str] | None = None) -> dict[str, str]:
    """This environment without any RAGLOOM_* setting, plus ``settings``; PYTHONPATH made absolute
    (a server may run in another folder)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    env.update(settings or {})
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    return env


def wait_healthy(base: str, process: subprocess.Popen | None = None, timeout: float = 300,
                 every: float = 0.3) -> bool:
    """Poll ``BASE/v1/healthz`` until it answers 200 (True), the process exits or time runs out (False)."""
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            return False
        try:
            if httpx.get(f"{base}/v1/healthz", timeout=2).status_code == 200:
                return True
        except httpx.HTTPError:
            time.sleep(every)
    return False


def start_ragloom(args: list[str], port: int, settings: dict[str, str], *, cwd: Path | None = None,
                  log: Path | None = None, timeout: float = 300, every: float = 0.3) -> subprocess.Popen:
    """``ragloom ARGS`` in a fresh process with only ``settings`` of RAGLOOM_*; returned once it answers
    on ``port``. Its output goes to ``log`` (else stderr is kept for the error message)."""
    out = open(log, "wb") if log else None  # noqa: SIM115 - the server's process writes it until it ends
    process = subprocess.Popen(ragloom_command(*args), cwd=cwd, env=clean_env(settings),
                               stdout=out or subprocess.DEVNULL, stderr=subprocess.STDOUT if out else subprocess.PIPE)
    if wait_healthy(f"http://127.0.0.1:{port}", process, timeout, every):
        return process
    process.kill()
    if log:
        raise SystemExit(f"the server did not start; see {log}")
    raise SystemExit("the server did not start: " + process.stderr.read().decode(errors="replace"))


# -- one JSON result per run ----------------------------------------------------------------------
_current: Run | None = None


def record(metrics: dict[str, Any] | None = None, **more: Any) -> None:
    """Add metrics to the current run's result (nothing outside ``python -m benchmarks``)."""
    if _current is not None:
        _current.metrics.update(metrics or {}, **more)


class _Tee(io.TextIOBase):
    def __init__(self, stream: Any) -> None:
        self.stream, self.kept = stream, io.StringIO()

    def write(self, text: str) -> int:
        self.kept.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding: the real stream's
        return getattr(self.stream, name)


class Run:
    """One benchmark run: ``with Run(name, args): main()`` writes RUNS/NAME-DATE.json at the end."""

    def __init__(self, name: str, args: list[str], folder: Path = RUNS) -> None:
        self.name, self.args, self.folder = name, args, folder
        self.metrics: dict[str, Any] = {}
        self.path: Path | None = None

    def __enter__(self) -> Run:
        global _current
        self.result: dict[str, Any] = {
            "name": self.name, "args": self.args, "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "commit": git_commit(), "machine": machine(), "load_before": round(load_average(), 2)}
        self._memory = TreeMemory(os.getpid(), every=0.2).__enter__()
        self._stdout, sys.stdout = sys.stdout, _Tee(sys.stdout)
        self._started = time.perf_counter()
        _current = self
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, *rest: object) -> None:
        global _current
        _current = None
        seconds = time.perf_counter() - self._started
        self._memory.__exit__()
        tee, sys.stdout = sys.stdout, self._stdout
        code = error.code if isinstance(error, SystemExit) else None
        status = "ok" if kind is None or code in (0, None) else "interrupted" if kind is KeyboardInterrupt else "failed"
        self.result.update(
            seconds=round(seconds, 3), load_after=round(load_average(), 2),
            peak_rss_mb=round(peak_rss_mb(), 1),  # this process's own peak (exact, unlike a sample)
            peak_tree_rss_mb=round(self._memory.peak_rss, 1), peak_tree_pss_mb=round(self._memory.peak_pss, 1),
            most_processes=self._memory.most_processes,
            status=status,
            metrics=self.metrics, output=tee.kept.getvalue())  # type: ignore[attr-defined]
        self.folder.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        self.path = self.folder / f"{self.name}-{stamp}.json"
        self.path.write_text(json.dumps(self.result, indent=1, default=str) + "\n", encoding="utf-8")
        print(f"[benchmarks] {self.name}: {seconds:.1f} s, load average {self.result['load_before']} before, "
              f"{self.result['load_after']} after; result in {_shown(self.path)}", file=sys.stderr)


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
