"""Source code cut by definition (tree-sitter grammars from their wheels), measured with the real bge-small tokenizer."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer

from ragloom.config import CODE_LANGUAGES, ChunkingConfig
from ragloom.ingest.chunkers._syntax import GRAMMARS, parser_for
from ragloom.ingest.chunkers.base import create_chunker
from ragloom.ingest.loaders import load_file
from ragloom.models import packaged_model_dir
from ragloom.types import Chunk

PYTHON = '''"""Module docs."""
import os

LIMIT = 3


@register
class Store(Base):
    """Keeps things."""

    kind = "store"

    def small(self):
        return 1

    def save(self, item, where):
        """Save the item."""
        first = [item for item in range(100) if item % 3 == 0 and item % 5 == 1 and item > 7]
        second = [item for item in range(100) if item % 7 == 0 and item % 11 == 1 and item > 9]
        third = [item for item in range(100) if item % 13 == 0 and item % 17 == 1 and item > 4]
        fourth = [item for item in range(100) if item % 19 == 0 and item % 23 == 1 and item > 2]
        return first + second + third + fourth


def top_level(value):
    # A helper.
    return value * 2


if __name__ == "__main__":
    top_level(LIMIT)
'''

JAVA = """package p;

public class Account {
  private int balance;

  public void deposit(int amount) {
    if (amount <= 0) { throw new IllegalArgumentException("amount must be positive"); }
    balance += amount;
  }

  public int withdraw(int amount) {
    if (amount > balance) { throw new IllegalStateException("not enough money in the account"); }
    balance -= amount;
    return balance;
  }
}
"""
KOTLIN = """class Greeter(val name: String) {
    fun greet(times: Int): String {
        val parts = mutableListOf<String>()
        for (i in 0 until times) { parts.add("hello, $name, for the ${i}th time") }
        return parts.joinToString(separator = "; ")
    }

    fun wave(): String {
        return "$name waves back at everybody in the room, slowly and politely"
    }
}
"""
CSHARP = """namespace Shop.Billing {
  public class Invoice {
    public decimal Total(decimal[] lines) {
      decimal sum = 0;
      foreach (var line in lines) { sum += line; }
      return sum;
    }

    public string Describe(string customer) {
      return "Invoice for " + customer + " with the usual payment terms of thirty days";
    }
  }
}
"""
RUBY = """module Kennel
  class Dog < Animal
    def bark(times)
      times.times do |i|
        puts "woof number #{i} from a very loud and enthusiastic dog"
      end
    end

    def fetch(item)
      "#{name} fetched the #{item} and brought it back to the porch"
    end

    def sleep(hours)
      "#{name} slept for #{hours} hours on the warm kitchen floor near the oven"
    end
  end
end
"""
SCALA = """object Main {
  def run(x: Int): Int = {
    val doubled = x * 2
    val tripled = x * 3
    doubled + tripled + 1
  }

  def describe(name: String): String = {
    s"$name is running the main program with all of the usual options today"
  }

  def stop(reason: String): String = {
    s"the main program stopped because $reason, and it will not start again"
  }
}
"""
SQL = """-- Users of the shop.
CREATE TABLE users (id int PRIMARY KEY, name text NOT NULL);
CREATE INDEX users_name ON users (name);
CREATE OR REPLACE FUNCTION user_count() RETURNS bigint AS $$
  SELECT count(*) FROM users; -- a semicolon inside the body
$$ LANGUAGE sql;
SELECT name FROM users WHERE id = 1;
"""

#: language -> (file name, text, {symbol: kind} that must be chunks, the class line leading its members'
#: chunks or None). Every class here is larger than the test's chunk size (64 tokens), so its methods
#: are chunks of their own: a chunker that keeps the whole file as one chunk fails.
SAMPLES = {
    "javascript": ("a.js", "/** Adds. */\nfunction add(a, b) {\n  return a + b;\n}\nclass Box {\n  open() { return 1; }\n}\n"
                   "app.init = function init() {\n  this.cache = {};\n};\n", {"add": "function", "Box": "class",
                                                                              "app.init": "function"}, None),
    "typescript": ("a.ts", "export function add(a: number): number {\n  return a;\n}\ninterface Shape {\n  area: number;\n}\n"
                   "export const twice = (a: number): number => {\n  return a * 2;\n};\n",
                   {"add": "function", "twice": "function"}, None),
    "tsx": ("a.tsx", "export function View(): JSX.Element {\n  return <div>hi</div>;\n}\n", {"View": "function"}, None),
    "go": ("a.go", "package p\n\n// Add adds.\nfunc Add(a int) int {\n\treturn a\n}\n\nfunc (s *Server) Serve() {\n}\n",
           {"Add": "function", "Server.Serve": "method"}, None),
    "rust": ("a.rs", "/// Adds.\nfn add(a: i32) -> i32 {\n    a\n}\nimpl<'a> Norm for Point<'a> {\n    fn norm(&self) -> f64 {\n"
             "        0.0\n    }\n}\n", {"add": "function", "Point": "class"}, None),
    "java": ("A.java", JAVA, {"Account.deposit": "method", "Account.withdraw": "method"}, "public class Account {"),
    "kotlin": ("a.kt", KOTLIN, {"Greeter.greet": "method", "Greeter.wave": "method"}, "class Greeter(val name: String) {"),
    "c": ("a.c", "#include <stdio.h>\n\nstatic int add(int a, int b) {\n    return a + b;\n}\n", {"add": "function"}, None),
    "cpp": ("a.cpp", "namespace n {\nclass Box {\n public:\n  int open() { return 1; }\n};\n}\nint Box::close() {\n  return 0;\n}\n",
            {"Box::close": "function", "n.Box": "class"}, None),
    "csharp": ("a.cs", CSHARP, {"Shop.Billing.Invoice.Total": "method", "Shop.Billing.Invoice.Describe": "method"},
               "public class Invoice {"),
    "ruby": ("a.rb", RUBY, {"Kennel.Dog.bark": "method", "Kennel.Dog.fetch": "method"}, "class Dog < Animal"),
    "php": ("a.php", "<?php\nfunction greet($name) {\n    return \"hi $name\";\n}\n", {"greet": "function"}, None),
    "swift": ("a.swift", "func greet(name: String) -> String {\n    return name\n}\n", {"greet": "function"}, None),
    "scala": ("a.scala", SCALA, {"Main.run": "method", "Main.describe": "method"}, "object Main {"),
    "bash": ("a.sh", "#!/bin/sh\nbackup() {\n  cp \"$1\" \"$1.bak\"\n}\nbackup file\n", {"backup": "function"}, None),
    "sql": ("a.sql", SQL, {"users": "table", "user_count": "function"}, None),
    "lua": ("a.lua", "function greet(name)\n  return 'hi ' .. name\nend\nlocal shout = function(name)\n  return name\nend\n",
            {"greet": "function", "shout": "function"}, None),
    "r": ("a.R", "#' The mean.\nmean_of <- function(x) {\n  mean(x)\n}\n", {"mean_of": "function"}, None),
}


@pytest.fixture(scope="module")
def chunker():
    tokenizer = Tokenizer.from_file(str(packaged_model_dir("bge_small_en") / "tokenizer.json"))

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    def offsets(text: str) -> list[tuple[int, int]]:
        return tokenizer.encode(text, add_special_tokens=False).offsets

    return create_chunker(ChunkingConfig(strategy="code", chunk_size=64), count, offsets)


def chunks_of(tmp_path: Path, name: str, text: str, chunker) -> list[Chunk]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return [c for d in load_file(path, str(path)).documents for c in chunker.chunk(d)]


def by_symbol(chunks: list[Chunk]) -> dict[str, list[Chunk]]:
    found: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        found.setdefault(chunk.metadata["symbol"], []).append(chunk)
    return found


def test_every_language_has_an_installed_grammar_that_parses_offline():
    languages = set(CODE_LANGUAGES.values()) - {"r"}  # R's is the r extra (tested where it is installed)
    assert languages <= set(GRAMMARS)
    for language in languages:
        assert parser_for(language) is not None, language


def test_python_is_cut_by_definition_with_symbol_kind_and_lines(tmp_path, chunker):
    chunks = chunks_of(tmp_path, "store.py", PYTHON, chunker)
    symbols = by_symbol(chunks)
    assert all(c.metadata["language"] == "python" for c in chunks)
    method = symbols["Store.small"][0]
    assert method.metadata["kind"] == "method"
    # The class's header line leads the method's chunk, decorators included.
    assert method.text.startswith("@register\nclass Store(Base):\n")
    lines = PYTHON.splitlines()
    assert lines[method.metadata["start_line"] - 1].strip() == "def small(self):"
    assert lines[method.metadata["end_line"] - 1].strip() == "return 1"
    function = symbols["top_level"][0]
    assert function.metadata["kind"] == "function" and function.text.startswith("def top_level(value):")
    assert function.metadata["section"] == "top_level"
    header = symbols["Store"][0]
    assert header.metadata["kind"] == "class" and '"""Keeps things."""' in header.text
    module = [c for c in chunks if c.metadata["kind"] == "module"]
    assert any("import os" in c.text for c in module) and any("__main__" in c.text for c in module)


def test_an_oversized_function_is_cut_between_statements_each_piece_led_by_its_signature(tmp_path, chunker):
    pieces = by_symbol(chunks_of(tmp_path, "store.py", PYTHON, chunker))["Store.save"]
    assert len(pieces) >= 2
    assert '"""Save the item."""' in pieces[0].text
    for piece in pieces[1:]:
        assert "def save(self, item, where):" in piece.text
        body = piece.text.split("def save(self, item, where):\n", 1)[1]
        assert body.lstrip().split(" ", 1)[0] in {"first", "second", "third", "fourth", "return"}
    assert pieces[-1].text.rstrip().endswith("return first + second + third + fourth")


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_each_language_gives_definitions_with_their_names(tmp_path, chunker, language):
    if language == "r":
        pytest.importorskip("tree_sitter_language_pack", reason="R's grammar is the r extra: pip install 'ragloom[r]'")
    name, text, expected, header = SAMPLES[language]
    chunks = chunks_of(tmp_path, name, text, chunker)
    assert chunks and all(c.metadata["language"] == language for c in chunks)
    symbols = by_symbol(chunks)
    for symbol, kind in expected.items():
        assert symbol in symbols, [c.metadata["symbol"] for c in chunks]
        assert symbols[symbol][0].metadata["kind"] == kind, (symbol, symbols[symbol][0].metadata["kind"])
        if header is not None:  # a member's chunk is led by its class's first line
            assert symbols[symbol][0].text.startswith(header), symbols[symbol][0].text
    assert len(chunks) >= len(expected) and all(c.metadata["kind"] != "lines" for c in chunks)
    for chunk in chunks:
        start, end = chunk.metadata["start_line"], chunk.metadata["end_line"]
        assert 1 <= start <= end <= text.count("\n") + 1


def test_a_file_that_does_not_parse_falls_back_to_line_chunks(tmp_path, chunker):
    broken = "def (((:\n" * 20 + "x = ]]]\n" * 20
    chunks = chunks_of(tmp_path, "broken.py", broken, chunker)
    assert chunks and {c.metadata["kind"] for c in chunks} == {"lines"}
    assert chunks[0].metadata["start_line"] == 1


def test_a_language_without_an_installed_grammar_is_cut_by_lines(tmp_path, chunker, monkeypatch):
    from ragloom.ingest.chunkers import _syntax

    monkeypatch.setitem(_syntax.GRAMMARS, "r", ("no_such_grammar_module", "language"))
    _syntax.parser_for.cache_clear()
    try:
        chunks = chunks_of(tmp_path, "stats.R", "mean_of <- function(x) {\n  mean(x)\n}\n", chunker)
    finally:
        monkeypatch.undo()
        _syntax.parser_for.cache_clear()
    assert [c.metadata["kind"] for c in chunks] == ["lines"] and chunks[0].metadata["language"] == "r"


def test_non_ascii_source_keeps_offsets_on_characters(tmp_path, chunker):
    text = '"""Grüße — ünïcode."""\n\n\ndef café(x):\n    return "naïve"\n'
    chunks = chunks_of(tmp_path, "u.py", text, chunker)
    function = by_symbol(chunks)["café"][0]
    assert function.text == text[function.start:function.end] and function.text.startswith("def café")
    assert function.metadata["start_line"] == 4


@pytest.mark.parametrize("name, text, reason", [
    ("bundle.min.js", "var a=1;", "minified"),
    ("bundle.js", "var a=1;" * 2000, "minified"),
    ("api_pb2.py", "# -*- coding: utf-8 -*-\n# Generated by the protocol buffer compiler.  DO NOT EDIT!\nx = 1\n",
     "generated"),
])
def test_minified_and_generated_files_are_skipped_with_a_reason(tmp_path, name, text, reason):
    path = tmp_path / name
    path.write_text(text)
    result = load_file(path, str(path))
    assert result.documents == [] and reason in (result.skip_reason or "")


def test_a_docstring_that_mentions_generated_code_is_not_a_generated_file(tmp_path):
    path = tmp_path / "fields.py"
    path.write_text('def restore(data):\n    """Unpickling function for auto-generated field types."""\n    return data\n')
    result = load_file(path, str(path))
    assert result.skip_reason is None and result.documents


def test_a_watcher_leaves_out_what_a_walk_leaves_out(tmp_path):
    from ragloom.ingest.ignore import left_out

    (tmp_path / "build").mkdir()
    (tmp_path / "src" / "gen").mkdir(parents=True)
    (tmp_path / "node_modules" / "x").mkdir(parents=True)
    (tmp_path / ".gitignore").write_text("build/\n*.tmp.py\n")
    (tmp_path / "src" / ".ragloomignore").write_text("gen/\n!keep.tmp.py\n")
    vendored = ["node_modules"]
    names = [".gitignore", ".ragloomignore"]
    assert left_out(tmp_path, tmp_path / "build" / "a.py", names, vendored)
    assert left_out(tmp_path, tmp_path / "src" / "gen" / "b.py", names, vendored)
    assert left_out(tmp_path, tmp_path / "node_modules" / "x" / "c.js", names, vendored)
    assert left_out(tmp_path, tmp_path / "src" / "scratch.tmp.py", names, vendored)
    assert not left_out(tmp_path, tmp_path / "src" / "keep.tmp.py", names, vendored)
    assert not left_out(tmp_path, tmp_path / "src" / "app.py", names, vendored)
