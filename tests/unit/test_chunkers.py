"""Chunkers measured with the real packaged bge-small tokenizer."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer

from ragloom.config import ChunkingConfig
from ragloom.ingest.chunkers._units import sentence_ranges
from ragloom.ingest.chunkers.base import Chunker, create_chunker
from ragloom.ingest.chunkers.markdown import MarkdownSectionChunker
from ragloom.ingest.chunkers.paragraph import ParagraphChunker
from ragloom.ingest.chunkers.recursive import RecursiveChunker
from ragloom.ingest.chunkers.sentence import SentenceChunker
from ragloom.ingest.loaders import load_file
from ragloom.models import packaged_model_dir
from ragloom.types import Chunk, Document


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.from_file(str(packaged_model_dir("bge_small_en") / "tokenizer.json"))


@pytest.fixture(scope="module")
def count(tokenizer: Tokenizer):
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)


@pytest.fixture(scope="module")
def make(tokenizer: Tokenizer, count):
    def offsets(text: str) -> list[tuple[int, int]]:
        return tokenizer.encode(text, add_special_tokens=False).offsets

    def build(strategy: str = "recursive", size: int = 64, overlap: int = 0, splitter: str = "punkt",
              with_offsets: bool = True) -> Chunker:
        config = ChunkingConfig(strategy=strategy, chunk_size=size, chunk_overlap=overlap, sentence_splitter=splitter)
        return create_chunker(config, count, offsets if with_offsets else None)

    return build


def doc(text: str, source: str = "/docs/a.txt", doc_id: str = "a.txt") -> Document:
    return Document(text=text, source=source, doc_id=doc_id, title="A")


def check_chunks(document: Document, chunks: list[Chunk], size: int | None = None) -> None:
    """Invariants every chunker keeps: exact spans, stripped, ordered, indexed, sized."""
    assert chunks
    for index, chunk in enumerate(chunks):
        assert chunk.text == document.text[chunk.start : chunk.end]
        assert chunk.text == chunk.text.strip()
        assert chunk.chunk_index == chunk.metadata["chunk_index"] == index
        assert (chunk.metadata["start"], chunk.metadata["end"]) == (chunk.start, chunk.end)
        if size is not None:
            assert chunk.token_count <= size, chunk.text
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)
    assert len({c.id for c in chunks}) == len(chunks)


SENTENCES = [
    "ROS 2 nodes exchange messages over named topics.",
    "A publisher does not know which subscribers exist.",
    "Services answer one request with one response.",
    "Actions report feedback while a long goal runs.",
    "Parameters configure a node at start-up or at run time.",
    "DDS discovers peers on the network without a master.",
    "Quality of service decides how reliably samples arrive.",
    "Best effort delivery suits high-rate sensor streams.",
]
PROSE = "\n\n".join(" ".join(SENTENCES[i:] + SENTENCES[:i]) for i in range(6))


# --- recursive ---------------------------------------------------------------------------


@pytest.mark.parametrize("with_offsets", [True, False])
def test_recursive_chunks_are_exact_spans_within_budget_with_overlap(make, count, with_offsets: bool) -> None:
    document = doc(PROSE)
    chunks = make("recursive", size=64, overlap=16, with_offsets=with_offsets).chunk(document)
    check_chunks(document, chunks, size=64)
    assert len(chunks) >= 6
    overlaps = [prev.end - nxt.start for prev, nxt in zip(chunks, chunks[1:])]
    assert all(o > 0 for o in overlaps), overlaps
    for prev, nxt in zip(chunks, chunks[1:]):
        shared = document.text[nxt.start : prev.end]
        assert 0 < count(shared) <= 16
        assert nxt.end > prev.end
    # Every character of text is in some chunk.
    covered = {i for c in chunks for i in range(c.start, c.end)}
    assert all(i in covered or ch.isspace() for i, ch in enumerate(document.text))


def test_recursive_without_overlap_breaks_at_paragraphs_when_they_fit(make) -> None:
    first = " ".join(SENTENCES[:4])
    second = " ".join(SENTENCES[4:])
    document = doc(f"{first}\n\n{second}")
    chunks = make("recursive", size=64, overlap=0).chunk(document)
    assert [c.text for c in chunks] == [first, second]


def test_recursive_short_document_is_one_stripped_chunk(make) -> None:
    document = doc("\n\n   A short note about tf2 frames.  \n")
    [chunk] = make("recursive", size=256, overlap=32).chunk(document)
    assert chunk.text == "A short note about tf2 frames."
    assert (chunk.start, chunk.end) == (5, 35)


def test_recursive_splits_a_long_run_without_spaces_at_token_boundaries(make) -> None:
    blob = "-".join(["robot", "sensor", "planner", "kalman"] * 30)
    document = doc(f"Intro sentence. {blob} The end.")
    chunks = make("recursive", size=32, overlap=8).chunk(document)
    check_chunks(document, chunks, size=32)
    assert len(chunks) >= 8


def test_recursive_tokenizes_each_document_once(tokenizer: Tokenizer) -> None:
    calls = {"count": 0, "offsets": 0}

    def count_tokens(text: str) -> int:
        calls["count"] += 1
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    def offsets(text: str) -> list[tuple[int, int]]:
        calls["offsets"] += 1
        return tokenizer.encode(text, add_special_tokens=False).offsets

    document = doc(PROSE * 20)
    chunker = RecursiveChunker(ChunkingConfig(chunk_size=64, chunk_overlap=16), count_tokens, offsets)
    spans = chunker.split(document)
    assert len(spans) > 100
    assert calls == {"count": 0, "offsets": 1}


# --- paragraph ---------------------------------------------------------------------------


def test_paragraph_chunker_packs_small_paragraphs_and_splits_big_ones_by_sentence(make) -> None:
    small = ["Topics carry streams.", "Services answer requests.", "Actions run long goals."]
    big = " ".join(SENTENCES * 2)
    document = doc("\n\n".join(small) + "\n\n" + big)
    chunks = make("paragraph", size=48).chunk(document)
    check_chunks(document, chunks, size=48)
    assert chunks[0].text.startswith("\n\n".join(small) + "\n\n" + SENTENCES[0])
    assert len(chunks) >= 3
    for chunk in chunks:
        # Cut only between sentences: each chunk ends a sentence, the next one starts one.
        assert chunk.text.endswith(".")
        assert chunk.text.startswith(tuple(SENTENCES) + tuple(small))


def test_paragraph_chunker_keeps_whole_paragraphs(make) -> None:
    paragraphs = [" ".join(SENTENCES[i : i + 2]) for i in range(0, 8, 2)]
    document = doc("\n\n".join(paragraphs))
    chunks = make("paragraph", size=40).chunk(document)
    check_chunks(document, chunks, size=40)
    for chunk in chunks:
        assert all(part in paragraphs for part in chunk.text.split("\n\n"))


# --- sentence ----------------------------------------------------------------------------


ABBREVIATIONS = "Dr. Smith tuned the EKF at 5 p.m. on Monday. The robot then drove e.g. to the dock. It stopped."


def test_sentence_chunker_with_punkt_respects_abbreviations(make) -> None:
    document = doc(ABBREVIATIONS)
    chunks = make("sentence", size=16, splitter="punkt").chunk(document)
    check_chunks(document, chunks, size=16)
    assert [c.text for c in chunks] == [
        "Dr. Smith tuned the EKF at 5 p.m. on Monday.",
        "The robot then drove e.g. to the dock. It stopped.",
    ]


@pytest.mark.parametrize(
    "splitter, expected",
    [
        ("punkt", ["Dr. Smith tuned the EKF at 5 p.m. on Monday.", "The robot then drove e.g. to the dock.",
                   "It stopped."]),
        ("regex", ["Dr.", "Smith tuned the EKF at 5 p.m.", "on Monday.", "The robot then drove e.g.",
                   "to the dock.", "It stopped."]),
    ],
)
def test_sentence_ranges_are_offsets_into_the_text(splitter: str, expected: list[str]) -> None:
    text = "  " + ABBREVIATIONS + "\n"
    ranges = sentence_ranges(text, 0, len(text), splitter)
    assert [text[s:e] for s, e in ranges] == expected
    assert ranges[0][0] == 2


def test_sentence_chunker_ids_depend_on_the_splitter(make) -> None:
    document = doc(ABBREVIATIONS)
    punkt_chunks = make("sentence", size=16, splitter="punkt").chunk(document)
    regex_chunks = make("sentence", size=16, splitter="regex").chunk(document)
    check_chunks(document, regex_chunks, size=16)
    assert [c.text for c in regex_chunks] == [c.text for c in punkt_chunks]  # same packing here
    assert not {c.id for c in regex_chunks} & {c.id for c in punkt_chunks}
    assert regex_chunks[0].policy.endswith("/splitter=regex")


def test_sentence_chunker_packs_sentences_up_to_budget(make, count) -> None:
    document = doc(" ".join(SENTENCES))
    chunks = make("sentence", size=32).chunk(document)
    check_chunks(document, chunks, size=32)
    texts = [sentence for chunk in chunks for sentence in chunk.text.split("  ")]
    assert " ".join(texts) == document.text
    # Greedy packing: no chunk could have taken the next chunk's first sentence.
    for chunk, nxt in zip(chunks, chunks[1:]):
        first_sentence = next(s for s in SENTENCES if nxt.text.startswith(s))
        assert count(chunk.text + " " + first_sentence) > 32


# --- markdown ----------------------------------------------------------------------------


CODE = "```python\n" + "\n".join(f"# step {i}\nvalue_{i} = compute(value_{i - 1}) * 2" for i in range(1, 20)) + "\n```"
TABLE = "| Policy | Options |\n|---|---|\n" + "\n".join(f"| policy {i} | option a, option b |" for i in range(12))
MARKDOWN = f"""Preamble before any header.

# Guide

## Install

Install the packages first.

### Linux

Use apt on Ubuntu.

#### Troubleshooting

If apt fails, update the index.

{CODE}

### macOS

Use Homebrew.

{TABLE}

## Usage

~~~
# comment in a tilde fence, not a header
~~~

Run the node.
"""


@pytest.fixture(scope="module")
def markdown_chunks(make) -> tuple[Document, list[Chunk]]:
    document = doc(MARKDOWN, source="/docs/guide.md", doc_id="guide.md")
    return document, make("markdown", size=48).chunk(document)


def test_markdown_chunks_carry_their_header_path(markdown_chunks, count) -> None:
    document, chunks = markdown_chunks
    check_chunks(document, chunks)
    paths = [tuple(c.metadata["section_path"]) for c in chunks]
    assert paths[0] == ()
    assert chunks[0].text == "Preamble before any header."
    by_start = {c.text.split("\n")[0]: c for c in chunks}
    assert by_start["# Guide"].metadata["section_path"] == ["Guide", "Install"]  # header-only section joins the next
    assert "## Install" in by_start["# Guide"].text
    linux = by_start["### Linux"]
    assert linux.metadata["section_path"] == ["Guide", "Install", "Linux"]
    assert linux.metadata["section"] == "Guide > Install > Linux"
    assert "#### Troubleshooting" in linux.text  # deeper headers stay in their section
    assert by_start["### macOS"].metadata["section_path"] == ["Guide", "Install", "macOS"]
    assert by_start["## Usage"].metadata["section_path"] == ["Guide", "Usage"]
    assert paths.count(("Guide", "Usage")) == 1 and "Run the node." in by_start["## Usage"].text
    for chunk in chunks:
        if CODE not in chunk.text and TABLE not in chunk.text:
            assert chunk.token_count <= 48


def test_markdown_never_splits_code_blocks_or_tables(markdown_chunks, count) -> None:
    document, chunks = markdown_chunks
    assert count(CODE) > 48 and count(TABLE) > 48
    [code_chunk] = [c for c in chunks if "value_1 =" in c.text]
    assert code_chunk.text == CODE
    assert code_chunk.metadata["section_path"] == ["Guide", "Install", "Linux"]
    [table_chunk] = [c for c in chunks if "policy 0" in c.text]
    assert table_chunk.text == TABLE
    assert table_chunk.metadata["section_path"] == ["Guide", "Install", "macOS"]


def test_markdown_hash_lines_in_fences_are_not_headers(markdown_chunks) -> None:
    _, chunks = markdown_chunks
    paths = {p for c in chunks for p in c.metadata["section_path"]}
    assert paths == {"Guide", "Install", "Linux", "macOS", "Usage"}
    assert not any(p.startswith(("step", "comment")) for p in paths)


def test_markdown_oversize_code_block_opening_a_section_keeps_its_header(make) -> None:
    document = doc(f"# API\n\n{CODE}\n\nAfter the code.")
    chunks = make("markdown", size=32).chunk(document)
    assert [c.text for c in chunks] == [f"# API\n\n{CODE}", "After the code."]
    assert all(c.metadata["section_path"] == ["API"] for c in chunks)


def test_markdown_packs_small_paragraphs_and_splits_large_sections(make) -> None:
    body = "\n\n".join(SENTENCES)
    document = doc(f"## Notes\n\n{body}")
    chunks = make("markdown", size=40).chunk(document)
    check_chunks(document, chunks, size=40)
    assert chunks[0].text.startswith("## Notes\n\n" + SENTENCES[0] + "\n\n" + SENTENCES[1])
    assert 2 <= len(chunks) < len(SENTENCES)
    assert all(c.metadata["section_path"] == ["Notes"] for c in chunks)


# --- ids, registry, sample corpus --------------------------------------------------------


def test_chunk_ids_are_deterministic_and_depend_on_policy(make) -> None:
    document = doc(PROSE)
    first = make("recursive", size=64, overlap=16).chunk(document)
    again = make("recursive", size=64, overlap=16).chunk(document)
    assert [c.id for c in first] == [c.id for c in again]
    assert [c.content_hash for c in first] == [c.content_hash for c in again]
    resized = make("recursive", size=96, overlap=16).chunk(document)
    assert not {c.id for c in first} & {c.id for c in resized}
    other = make("paragraph", size=64).chunk(document)
    assert not {c.id for c in first} & {c.id for c in other}
    moved = make("recursive", size=64, overlap=16).chunk(doc(PROSE, source="/docs/b.txt"))
    assert not {c.id for c in first} & {c.id for c in moved}
    assert first[0].policy == "recursive/v1/size=64/overlap=16"


@pytest.mark.parametrize(
    "strategy, cls",
    [("recursive", RecursiveChunker), ("paragraph", ParagraphChunker), ("sentence", SentenceChunker),
     ("markdown", MarkdownSectionChunker)],
)
def test_registry_builds_each_strategy(make, strategy: str, cls: type) -> None:
    chunker = make(strategy)
    assert type(chunker) is cls
    assert chunker.policy.startswith(f"{strategy}/v{cls.version}/size=64/")


@pytest.mark.parametrize("strategy", ["recursive", "paragraph", "sentence", "markdown"])
def test_sample_corpus_gives_several_chunks_per_file(sample_docs: list[Path], make, strategy: str) -> None:
    chunker = make(strategy, size=256, overlap=32 if strategy == "recursive" else 0)
    for path in sample_docs:
        [document] = load_file(path, str(path)).documents
        chunks = chunker.chunk(document)
        check_chunks(document, chunks)
        assert len(chunks) >= 3, path.name
        assert all(c.token_count <= 256 for c in chunks if "```" not in c.text)
        assert any("nodes communicate" in c.text for c in chunks) == (path.suffix == ".md")


def test_pdf_sample_chunks_know_their_pages(sample_docs: list[Path], make) -> None:
    path = next(p for p in sample_docs if p.suffix == ".pdf")
    [document] = load_file(path, str(path)).documents
    chunks = make("recursive", size=256, overlap=32).chunk(document)
    assert {c.metadata["page"] for c in chunks} == {1, 2, 3}
    rrt = next(c for c in chunks if "rapidly-exploring random tree" in c.text)
    assert rrt.metadata["page"] == 2


def test_markdown_section_titles_drop_heading_attribute_lists_but_the_text_keeps_them(make) -> None:
    # MkDocs (attr_list), Pandoc and kramdown write a heading's id and classes after its title.
    text = ("# Query Parameters { #query-parameters }\n\nIntro to parameters.\n\n"
            "## Optional parameters {#optional-parameters .note data-x=\"a b\"}\n\nThe same way, you can declare.\n\n"
            "## Sets {a, b} and JSON {\"k\": 1}\n\nBraces that are not attributes stay.\n")
    document = doc(text, "/docs/query.md", "query.md")
    chunks = make("markdown", size=24).chunk(document)
    check_chunks(document, chunks, 24)
    sections = [c.metadata["section"] for c in chunks]
    assert "Query Parameters > Optional parameters" in sections
    assert 'Query Parameters > Sets {a, b} and JSON {"k": 1}' in sections
    assert not any("{ #" in s or "{#" in s for s in sections)
    assert all(document.text[c.start:c.end] == c.text for c in chunks)  # stored text and offsets hold
    assert "{#optional-parameters .note" in "".join(c.text for c in chunks)
    assert make("markdown").policy.startswith("markdown/v2/")
