"""Shared fixtures: real packaged model, real embedded store, corpora written by the tests."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

# Tests must never reach a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

#: What a skip names when a component is missing, per component. `.ci/run` sets
#: ``CI_REQUIRED_COMPONENTS=postgres,chromium,tesseract,sources``: CI installs them, so a test skipped for
#: the lack of one of them means a broken install, and fails instead of passing silently.
COMPONENT_SKIPS = {
    "postgres": re.compile(r"pgserver|psycopg|pgvector|postgres", re.IGNORECASE),
    "chromium": re.compile(r"chromium|chromedriver|selenium", re.IGNORECASE),
    "tesseract": re.compile(r"tesseract", re.IGNORECASE),
    # Remote sources: moto's S3 server and boto3, the fixture website's server, the git command, Dovecot.
    "sources": re.compile(r"moto|boto3|protego|pytest_httpserver|the git command|dovecot", re.IGNORECASE),
}

#: The conformance suite skips what a store declares it does not offer ("the postgres store does not
#: declare Abilities.value_counts"): that names a component but is no sign of a broken install.
DECLARED_SKIP = re.compile(r"store does not declare Abilities\.\w+$")


def required_components() -> dict[str, re.Pattern[str]]:
    named = [n.strip() for n in os.environ.get("CI_REQUIRED_COMPONENTS", "").split(",") if n.strip()]
    unknown = [n for n in named if n not in COMPONENT_SKIPS]
    if unknown:
        raise pytest.UsageError(f"CI_REQUIRED_COMPONENTS names {unknown}; known: {', '.join(COMPONENT_SKIPS)}")
    return {name: COMPONENT_SKIPS[name] for name in named}


def _skip_reason(report: pytest.CollectReport | pytest.TestReport) -> str:
    longrepr = report.longrepr
    return str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)


def _missing_required(report: pytest.CollectReport | pytest.TestReport) -> list[str]:
    """The required components whose lack a skip reports (none for any other skip)."""
    if not report.skipped:
        return []
    reason = _skip_reason(report)
    if DECLARED_SKIP.search(reason):  # the store's own declaration, not a missing install
        return []
    return [name for name, pattern in required_components().items() if pattern.search(reason)]


def _why(missing: list[str], reason: str) -> str:
    return (f"skipped for the lack of {', '.join(missing)}, which CI_REQUIRED_COMPONENTS requires (the install "
            f"is broken: run scripts/setup.sh --test): {reason}")


#: Modules skipped whole at collection for the lack of a required component (reported at the end:
#: a collection error would stop the whole run).
_UNCOLLECTED: list[str] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    outcome = yield
    report = outcome.get_result()
    missing = _missing_required(report)
    if missing:  # the test fails, saying why
        report.outcome, report.longrepr = "failed", _why(missing, _skip_reason(report))


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> object:
    outcome = yield
    report = outcome.get_result()
    missing = _missing_required(report)
    if missing:
        _UNCOLLECTED.append(f"{report.nodeid}: {_why(missing, _skip_reason(report))}")


def pytest_terminal_summary(terminalreporter: object, exitstatus: int) -> None:
    for line in _UNCOLLECTED:
        terminalreporter.write_line(f"FAILED (not collected) {line}", red=True)  # type: ignore[attr-defined]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _UNCOLLECTED and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def embedder():
    """The packaged ONNX embedder, loaded once per test session."""
    from ragloom.config import EmbedderConfig
    from ragloom.embed import create_embedder

    return create_embedder(EmbedderConfig())


@pytest.fixture(scope="session")
def sample_docs() -> list[Path]:
    """The sample corpus the demo ingests: one file per format (md, txt, pdf, html), sorted."""
    return sorted((Path(__file__).resolve().parents[1] / "examples" / "sample_docs").iterdir())


@pytest.fixture(scope="session")
def python_bin() -> str:
    return sys.executable


@pytest.fixture
def chdir_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("RAGLOOM_"):
            monkeypatch.delenv(name)
    return tmp_path


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL 16 with pgvector (the ``pgserver`` wheel), one per test session. Its folder
    is not under pytest's (private to this user): run as root, pgserver runs the server as its own user."""
    pytest.importorskip("pgserver")
    pytest.importorskip("psycopg")
    import shutil
    import tempfile

    from ragloom.testing.postgres import PostgresServer

    folder = Path(tempfile.mkdtemp(prefix="ragloom-pg-"))
    folder.chmod(0o755)
    try:
        with PostgresServer(folder) as server:
            yield server
    finally:
        shutil.rmtree(folder, ignore_errors=True)
