"""Identifiers: found in queries (to be looked up exactly) and in chunk texts (indexed whole and split)."""

from __future__ import annotations

import pytest

from ragloom.retrieve.identifiers import query_identifiers
from ragloom.stores.embedded.identifiers import camel_parts, identifiers


@pytest.mark.parametrize("query, expected", [
    ("where is 3f2a8c1e-55b4-4c1d-9e2f-0a1b2c3d4e5f used?", ["3f2a8c1e-55b4-4c1d-9e2f-0a1b2c3d4e5f"]),
    ("commit 9fceb02d broke it", ["9fceb02d"]),
    ("what changed in v2.3.1", ["v2.3.1"]),
    ("error ORA-00942 and E1234", ["ORA-00942", "E1234"]),
    ("open settings.yaml please", ["settings.yaml"]),
    ("call os.path.join or parse_config or getUserName", ["os.path.join", "parse_config", "getUserName"]),
    ("MAX_RETRIES", ["MAX_RETRIES"]),
    ("how do I bake bread with a well-known recipe", []),
    ("use a tool, e.g. a drill, i.e. not a hammer", []),
    ("python get file extension", []),
    # biomedical names and measures are words of prose, not identifiers to look up exactly
    ("MicroRNA and miRNA regulate IgG, IL-10 and H2A.Z at 2.5 mg in mRNAs", []),
    ("useState in UserService after 2.3.1", ["useState", "UserService", "2.3.1"]),
    # histone marks and gene names are letter-digit runs, not words joined in camelCase
    ("H3K4me3 and H3K79me2 with miR7a and FoxO3a", []),
    ("S3Client, Http2Server and getUserName", ["S3Client", "Http2Server", "getUserName"]),
])
def test_query_identifiers(query, expected):
    assert query_identifiers(query) == expected


def test_chunk_identifiers_are_whole_lowercased_and_plain_words_are_not():
    text = "Call parse_config() with v2.3.1 and ID 3f2a8c1e-55b4-4c1d-9e2f-0a1b2c3d4e5f; read the getUserName docs."
    found = identifiers(text)
    assert {"parse_config", "v2.3.1", "3f2a8c1e-55b4-4c1d-9e2f-0a1b2c3d4e5f", "getusername"} <= set(found)
    assert not {"call", "with", "read", "docs"} & set(found)


def test_camel_case_words_are_split_into_their_parts():
    assert camel_parts("def getUserName(self): return HTTPServer") == "get User Name HTTP Server"
    assert camel_parts("plain words only") == ""
