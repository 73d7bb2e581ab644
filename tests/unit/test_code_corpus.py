"""Real source files of every language read (tests/fixtures/code, origins and licences in its NOTICE),
cut by the code chunker at the default chunk size with the real bge-small tokenizer: the definitions
each file holds are chunks named by their qualified symbols, and each method of a class too large for
one chunk is its own chunk, led by the class's first line."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer

from ragloom.config import ChunkingConfig
from ragloom.ingest.chunkers.base import create_chunker
from ragloom.ingest.loaders import load_file
from ragloom.models import packaged_model_dir
from ragloom.types import Chunk

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "code"

#: file -> ({symbol: kind} that must be chunks, {method: the class line its chunk starts with}).
EXPECTED: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "python/parser.py": ({"_split_opt": "function", "_Option": "class", "_OptionParser.parse_args": "method"},
                         {"_OptionParser.parse_args": "class _OptionParser:"}),
    "python/_urls.py": ({"URL": "class", "URL.copy_add_param": "method", "QueryParams.merge": "method"},
                        {"URL.copy_add_param": "class URL:"}),
    "javascript/application.js": ({"app.init": "function", "app.use": "function", "app.render": "function"}, {}),
    "javascript/view.js": ({"View": "function", "View.prototype.lookup": "function", "tryStat": "function"}, {}),
    "typescript/retry-timing.ts": ({"parseDate": "function", "calculateRetryTimingDelay": "function"}, {}),
    "typescript/HTTPError.ts": ({"HTTPError": "class"}, {}),
    "tsx/ssr.test.tsx": ({"BearStoreState": "class", "Counter": "function"}, {}),
    "go/args.go": ({"legacyArgs": "function", "ExactArgs": "function", "MatchAll": "function"}, {}),
    "go/flag_groups.go": ({"Command.MarkFlagsRequiredTogether": "method", "Command.ValidateFlagGroups": "method",
                           "hasAllFlags": "function"}, {}),
    "rust/key.rs": ({"ToKey": "class", "Key.as_str": "method", "std_support.String": "class"},
                    {"Key.as_str": "impl<'k> Key<'k> {"}),
    "rust/__private_api.rs": ({"log_impl": "function", "kv_support.capture_to_value": "function"}, {}),
    "java/JsonArray.java": ({"JsonArray": "class", "JsonArray.deepCopy": "method", "JsonArray.asList": "method"},
                            {"JsonArray.getAsString": "public final class JsonArray extends JsonElement "
                                                      "implements Iterable<JsonElement> {"}),
    "java/JsonPrimitive.java": ({"JsonPrimitive.isBoolean": "method", "JsonPrimitive.equals": "method"},
                                {"JsonPrimitive.getAsNumber": "public final class JsonPrimitive extends JsonElement {"}),
    "kotlin/HashingSink.kt": ({"HashingSink.write": "method", "HashingSink.sha256": "method"},
                              {"HashingSink.sha256": "expect class HashingSink : Sink {"}),
    "kotlin/Options.kt": ({"Options": "class", "Options.buildTrieRecursive": "method"},
                          {"Options.buildTrieRecursive": "class Options private constructor("}),
    "c/sds.c": ({"sdsnewlen": "function", "sdsMakeRoomFor": "function", "sdssplitargs": "function"}, {}),
    "cpp/cxxopts.hpp": ({"cxxopts.OptionValue.parse_no_value": "method", "cxxopts.Options": "class"},
                        {"cxxopts.OptionValue.parse_no_value": "class OptionValue"}),
    "csharp/ArticlePrefixSort.cs": ({"EnglishArticle.AppendArticlePrefix": "method",
                                     "EnglishArticle.PrependArticleSuffix": "method"},
                                    {"EnglishArticle.IsArticle": "public static class EnglishArticle"}),
    "csharp/ByteRate.cs": ({"ByteRate.Humanize": "method", "ByteRate.CompareTo": "method"},
                           {"ByteRate.ToString": "public class ByteRate(ByteSize size, TimeSpan interval) :"}),
    "ruby/show_exceptions.rb": ({"Sinatra.ShowExceptions.call": "method", "Sinatra.ShowExceptions": "class"},
                                {"Sinatra.ShowExceptions.call": "class ShowExceptions < Rack::ShowExceptions"}),
    "ruby/indifferent_hash.rb": ({"Sinatra.IndifferentHash.fetch": "method"},
                                 {"Sinatra.IndifferentHash.fetch": "class IndifferentHash < Hash"}),
    "php/Dotenv.php": ({"Dotenv.createImmutable": "method", "Dotenv.safeLoad": "method"},
                       {"Dotenv.safeLoad": "class Dotenv"}),
    "php/Lines.php": ({"Lines.process": "method", "Lines.multilineProcess": "method"}, {"Lines.process": "final class Lines"}),
    "swift/MessageInfo.swift": ({"MessageInfo.init": "method", "MessageInfo.fullText": "method"},
                                {"MessageInfo.fullText": "enum MessageInfo {"}),
    "swift/Name.swift": ({"Name": "class"}, {}),
    "scala/OParser.scala": ({"OParserBuilder.opt": "method", "OParser.parse": "method"},
                            {"OParser.keyName": "class OParser[A, C](head: OptionDef[A, C], rest: List[OptionDef[_, C]]) {"}),
    "bash/install.sh": ({"nvm_has": "function", "nvm_detect_profile": "function", "install_nvm_from_git": "function"},
                        {}),
    "sql/postgres-sakila-schema.sql": ({"actor": "table", "film": "table", "film_in_stock": "function",
                                        "actor_info": "view", "last_updated": "function"}, {}),
    "lua/inspect.lua": ({"Inspector:getId": "function", "escape": "function", "sortKeys": "function"}, {}),
    "r/glue.R": ({"glue": "function", "glue_collapse": "function", "print.glue": "function"}, {}),
}


@pytest.fixture(scope="module")
def chunker():
    tokenizer = Tokenizer.from_file(str(packaged_model_dir("bge_small_en") / "tokenizer.json"))
    return create_chunker(ChunkingConfig(strategy="code"),
                          lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids),
                          lambda text: tokenizer.encode(text, add_special_tokens=False).offsets)


def chunks_of(path: Path, chunker) -> list[Chunk]:
    return [c for d in load_file(path, str(path)).documents for c in chunker.chunk(d)]


def test_every_language_has_real_files_with_a_notice():
    languages = {path.parent.name for path in CORPUS.glob("*/*") if path.parent.name != "LICENSES"}
    assert len(languages) == 19  # the 17 languages, TSX and R
    notice = (CORPUS / "NOTICE").read_text()
    for name in EXPECTED:
        assert name in notice, name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_files_give_their_definitions_by_qualified_symbol(name, chunker):
    if name.startswith("r/"):
        pytest.importorskip("tree_sitter_language_pack", reason="R's grammar is the r extra: pip install 'ragloom[r]'")
    path = CORPUS / name
    chunks = chunks_of(path, chunker)
    definitions, led = EXPECTED[name]
    symbols: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        symbols.setdefault(chunk.metadata["symbol"], []).append(chunk)
    assert not any(c.metadata["kind"] == "lines" for c in chunks), name
    for symbol, kind in definitions.items():
        assert symbol in symbols, (symbol, sorted(symbols)[:40])
        # (A file's own top-level code is named after the file: JsonArray.java's imports are "JsonArray" too.)
        assert kind in {c.metadata["kind"] for c in symbols[symbol]}, (symbol, symbols[symbol][0].metadata["kind"])
    for method, header in led.items():
        first = next(c for c in symbols[method] if c.metadata["kind"] == "method")
        assert first.metadata["kind"] == "method" and first.text.startswith(header + "\n"), first.text[:200]
    lines = path.read_text(encoding="utf-8").count("\n") + 1
    for chunk in chunks:  # every chunk's lines are in the file, and a definition's section is its symbol
        assert 1 <= chunk.metadata["start_line"] <= chunk.metadata["end_line"] <= lines
        assert chunk.metadata["section"] == chunk.metadata["symbol"]
