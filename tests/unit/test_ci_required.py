"""CI installs PostgreSQL, Chromium and Tesseract: there, a test skipped for the lack of one of them
fails (``CI_REQUIRED_COMPONENTS``, set by ``.ci/run``); elsewhere it is skipped as before."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"
TESTS = """
import pytest

def test_postgres():
    pytest.importorskip("pgserver_that_is_not_installed")

def test_browser():
    pytest.skip("no Chromium here: scripts/setup.sh --test installs it")

@pytest.mark.skipif(True, reason="Tesseract is not installed (scripts/setup.sh --test installs it)")
def test_ocr():
    pass

def test_something_else():
    pytest.skip("one process at a time may open a Qdrant local folder")

def test_an_ability_the_store_does_not_declare():
    pytest.skip("the postgres store does not declare Abilities.value_counts")
"""
MODULE_SKIP = """
import pytest
pytest.importorskip("psycopg_that_is_not_installed")

def test_never_collected():
    pass
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_parts=TESTS, test_module_skip=MODULE_SKIP)
    return pytester


def test_without_the_variable_missing_components_are_skips(suite: pytest.Pytester, monkeypatch):
    monkeypatch.delenv("CI_REQUIRED_COMPONENTS", raising=False)
    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(skipped=6)


def test_in_ci_a_skip_for_a_required_component_fails_and_says_why(suite: pytest.Pytester, monkeypatch):
    monkeypatch.setenv("CI_REQUIRED_COMPONENTS", "postgres,chromium,tesseract")
    result = suite.runpytest("-p", "no:cacheprovider", "-rA")
    # A skip in the call fails the test, one in its setup (skipif) errors it; the module skipped
    # whole is named at the end and fails the run.
    # A store's declared lack of an ability names the store but is no missing install: a skip still.
    result.assert_outcomes(failed=2, errors=1, skipped=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    for line in ("*FAILED (not collected) test_module_skip.py: skipped for the lack of postgres*",
                 "*skipped for the lack of chromium*", "*skipped for the lack of tesseract*"):
        result.stdout.fnmatch_lines([line])


def test_a_component_ci_does_not_know_is_an_error(suite: pytest.Pytester, monkeypatch):
    monkeypatch.setenv("CI_REQUIRED_COMPONENTS", "postgres,oracle")
    result = suite.runpytest("-p", "no:cacheprovider")
    assert result.ret != 0
