"""Presets are a registry role: built-ins, runtime registrations and entry points alike, and
every help text and error that lists them asks the registry."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from ragloom import registry
from ragloom.errors import UnknownComponentError
from ragloom.retrieve.pipeline import PRESETS, build_pipeline, preset_names, register_preset


def test_presets_are_a_registry_role() -> None:
    assert "preset" in registry.ROLES
    assert preset_names() == registry.names("preset") == sorted(PRESETS)
    assert registry.resolve("preset", "precise") == PRESETS["precise"]
    # Every built-in preset is there without importing the modules of its techniques first.
    assert {"dense", "lexical", "hybrid", "fast", "balanced", "precise", "graph", "graph-boost", "raptor",
            "corrective", "hyde", "multi-query"} <= set(PRESETS)
    assert "grep" not in PRESETS  # a retriever (the fallback), not a preset


def test_a_registered_preset_is_built_listed_and_named_in_errors() -> None:
    register_preset("test-lexical-dedup", [{"lexical": {}}, {"dedup": {}}])
    try:
        assert build_pipeline(preset="test-lexical-dedup").steps == ["lexical", "dedup"]
        with pytest.raises(UnknownComponentError, match="test-lexical-dedup"):
            build_pipeline(preset="no-such-preset")
    finally:
        registry._registered["preset"].pop("test-lexical-dedup")


def test_custom_presets_win_over_registered_ones() -> None:
    assert build_pipeline(preset="fast", custom_presets={"fast": [{"dense": {}}]}).steps == ["dense"]


@pytest.mark.parametrize("command", ["search", "eval"])
def test_help_lists_exactly_the_registered_presets(command: str) -> None:
    env = {**os.environ, "COLUMNS": "1000", "TERM": "dumb"}
    out = subprocess.run([sys.executable, "-m", "ragloom", command, "--help"], capture_output=True, text=True,
                         env=env, timeout=120).stdout
    listed = re.search(r"Search preset: (.*?), or one", " ".join(out.split()))
    assert listed is not None, out
    assert listed.group(1).split(", ") == registry.names("preset")
    assert "grep" not in listed.group(1).split(", ")
