"""Hostile files, markup in names, bounded memory, and the CLI's handling of bad input (issue 15).

Each test reproduces one item of the reliability probe: it failed (crash, hang, traceback,
silent wrong result) before the fix.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragloom import Config, Index
from ragloom.testing.pdf import write_pdf

RAGLOOM = [sys.executable, "-m", "ragloom"]
REPO = Path(__file__).resolve().parents[2]


def run(*args: str, cwd: Path, check: bool = True, env: dict | None = None, timeout: float = 120,
        columns: int | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_") and k != "COLUMNS"}
    if columns is not None:
        full_env["COLUMNS"] = str(columns)
    full_env.update(env or {})
    result = subprocess.run([*RAGLOOM, *args], cwd=cwd, capture_output=True, text=True, env=full_env,
                            timeout=timeout, errors="replace")
    if check and result.returncode != 0:
        raise AssertionError(f"ragloom {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


def no_traceback(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result.stderr


def one_line_error(result: subprocess.CompletedProcess) -> str:
    """The error a failed command printed: exactly one line, no traceback."""
    no_traceback(result)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def sources(cwd: Path, index: str = ".ragloom") -> list[str]:
    status = json.loads(run("-i", index, "status", "--sources", "--json", cwd=cwd).stdout)
    return sorted(Path(s["path"]).name for s in status["source_list"])


# --- items 1-3: one bad file never aborts an ingest ------------------------------------------


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS refuses file names that are not UTF-8")
def test_bad_names_loops_pipes_and_devices_are_reported_and_the_rest_indexed(tmp_path):
    docs = tmp_path / "d"
    docs.mkdir()
    (docs / "a.txt").write_text("good words about robots")
    (docs / "z.txt").write_text("more words about lidar")
    bad = os.fsencode(docs) + b"/bad\xff.txt"
    with open(bad, "wb") as handle:
        handle.write(b"x")
    os.symlink("l2.txt", docs / "l1.txt")
    os.symlink("l1.txt", docs / "l2.txt")
    os.mkfifo(docs / "pipe.txt")
    os.symlink("/dev/zero", docs / "zero.txt")

    result = run("ingest", "d", "--json", cwd=tmp_path, timeout=120)  # a FIFO used to hang here
    report = json.loads(result.stdout)
    no_traceback(result)
    assert report["added"] == 2 and report["failed"] == 5
    failures = {Path(f["path"]).name: f["error"] for f in report["failures"]}
    assert "not valid UTF-8" in failures["bad\\xff.txt"]
    assert "symlink loop" in failures["l1.txt"] and "symlink loop" in failures["l2.txt"]
    assert "named pipe" in failures["pipe.txt"] and "character device" in failures["zero.txt"]
    assert sources(tmp_path) == ["a.txt", "z.txt"]

    shown = run("ingest", "d", cwd=tmp_path)  # the table report prints the same without crashing
    assert "failed: d/bad\\xff.txt: the file name is not valid UTF-8" in shown.stderr


def test_files_above_the_size_limit_are_skipped_with_a_message(tmp_path):
    docs = tmp_path / "d"
    docs.mkdir()
    (docs / "small.txt").write_text("a short note about odometry")
    (docs / "big.txt").write_text("word " * 1000)  # 5,000 bytes
    (tmp_path / "ragloom.yaml").write_text("ingest:\n  max_file_mb: 0.004\n")
    result = run("ingest", "d", cwd=tmp_path)
    assert "big.txt: skipped: larger than 0.004 MB (0.005 MB); raise ingest.max_file_mb" in result.stderr
    assert sources(tmp_path) == ["small.txt"]


def test_a_file_that_breaks_a_loader_is_reported_and_the_rest_indexed(tmp_path, embedder, monkeypatch):
    from ragloom import registry
    from ragloom.ingest.loaders.text import TextFileLoader

    class Explosive(TextFileLoader):  # a plugin with a bug: not a LoaderError
        name = "explosive"
        extensions = (".boom",)

        def parse(self, text, path, source):
            raise ValueError("the plugin tripped")

    monkeypatch.setitem(registry._registered["loader"], "explosive", Explosive)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("plain notes about lidar")
    (docs / "b.boom").write_text("anything")
    (docs / "c.jsonl").write_text('{"_id": "1", "text": "odometry"}\n' + "[" * 100_000 + "\n")
    config = Config(index=str(tmp_path / "ix"))
    with Index.open(config.index, config, embedder=embedder) as index:
        report = index.ingest([docs])
    assert sorted(Path(p).name for p in report.added) == ["a.txt", "c.jsonl"]
    [failure] = report.failed
    assert failure.path.endswith("b.boom") and failure.error == "could not be read (ValueError: the plugin tripped)"
    assert any("c.jsonl: skipped 1 unreadable line (line 2)" in w for w in report.warnings)


# --- item 4: chunking a long single-line text holds no per-token Python objects ----------------


def test_chunking_a_long_single_line_text_stays_small_in_memory(embedder):
    import tracemalloc

    from ragloom.config import ChunkingConfig
    from ragloom.ingest.chunkers.base import create_chunker
    from ragloom.types import Document

    words = ["robot", "lidar", "planning", "the", "of", "calibration", "motion", "sensor"]
    text = " ".join(words[(i * 7 + i // 3) % len(words)] for i in range(300_000))  # ~2 MB, one line
    document = Document(text=text, source="long.txt", doc_id="long.txt")
    chunker = create_chunker(ChunkingConfig(), embedder.count_tokens, embedder.token_offsets)
    tracemalloc.start()
    try:
        spans = chunker.spans(document)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert spans[0].start == 0 and spans[-1].end == len(text)
    # Lists of (start, end) tuples and of word-break ints took 26 bytes of Python objects a character
    # (and 140 bytes of RSS with the tokenizer's own); arrays of positions take about 4.
    assert peak < 10 * len(text), f"{peak / len(text):.1f} bytes of Python objects per character"


def test_tokenizing_in_pieces_gives_the_same_chunks(embedder, monkeypatch):
    from ragloom.config import ChunkingConfig
    from ragloom.ingest.chunkers import _tokens
    from ragloom.ingest.chunkers.base import create_chunker
    from ragloom.types import Document

    text = "\n\n".join(
        f"Paragraph {i}: lidar odometry drifts, so the robot re-localises every {i} metres. " * (1 + i % 5)
        for i in range(400)
    )
    document = Document(text=text, source="t.md", doc_id="t.md")
    for strategy in ("recursive", "markdown"):
        chunker = create_chunker(ChunkingConfig(strategy=strategy), embedder.count_tokens, embedder.token_offsets)
        whole = chunker.spans(document)
        monkeypatch.setattr(_tokens, "TOKENIZE_PIECE_CHARS", 997)
        pieces = chunker.spans(document)
        monkeypatch.undo()
        assert pieces == whole and len(whole) > 20


# --- item 5: HTML extraction is linear in the page however deep it nests -----------------------


def test_deeply_nested_html_is_read_in_linear_time(tmp_path):
    from ragloom.ingest.loaders.html import HtmlLoader

    def calls(depth: int) -> int:
        page = tmp_path / f"nested{depth}.html"
        page.write_text("<html><body>" + "<div><span>x</span>" * depth + "</div>" * depth + "<p>end</p></body></html>")
        count = 0

        def profile(frame, event, arg):
            nonlocal count
            count += event in ("call", "c_call")

        sys.setprofile(profile)
        try:
            [document] = HtmlLoader().load(page, str(page)).documents
        finally:
            sys.setprofile(None)
        assert document.text.endswith("end")
        return count

    # Function calls, not seconds: doubling the depth doubles the work (it quadrupled before).
    assert calls(800) / calls(400) < 2.5
    deep = tmp_path / "deep.html"
    deep.write_text("<div>" * 100_000 + "deep text" + "</div>" * 100_000)
    assert HtmlLoader().load(deep, str(deep)).documents[0].text == "deep text"


# --- items 6-7: unreadable folders, symlinks that leave the folder -----------------------------


def test_an_unreadable_subfolder_is_reported_and_its_indexed_files_kept(tmp_path, embedder, monkeypatch):
    docs = tmp_path / "docs"
    (docs / "locked").mkdir(parents=True)
    (docs / "open.txt").write_text("the open file about lidar")
    (docs / "locked" / "inside.txt").write_text("the locked file about odometry")
    config = Config(index=str(tmp_path / "ix"))
    with Index.open(config.index, config, embedder=embedder) as index:
        assert len(index.ingest([docs]).added) == 2
        locked = docs / "locked"
        if os.geteuid() == 0:  # root reads any folder: make the OS refuse this one as it would a user
            real_scandir = os.scandir

            def refuse(path=".", *args, **kwargs):
                if Path(os.fsdecode(path)) == locked:
                    raise PermissionError(13, "Permission denied", str(path))
                return real_scandir(path, *args, **kwargs)

            monkeypatch.setattr(os, "scandir", refuse)
        else:
            locked.chmod(0)
        try:
            report = index.ingest([docs])
        finally:
            locked.chmod(0o755)
        [failure] = report.failed
        assert failure.path == str(locked.resolve()) and "cannot read the folder: Permission denied" in failure.error
        assert report.removed == []  # not swept: it could not be read, it was not deleted
        assert len(index.sources()) == 2


def test_a_symlink_out_of_the_folder_is_indexed_under_the_link_and_swept_with_it(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("notes kept outside the folder about grasping")
    docs = tmp_path / "d"
    docs.mkdir()
    (docs / "a.txt").write_text("inside text about lidar")
    (docs / "link.txt").symlink_to(outside)
    run("ingest", "d", cwd=tmp_path)
    status = json.loads(run("status", "--sources", "--json", cwd=tmp_path).stdout)
    assert sorted(s["path"] for s in status["source_list"]) == [
        str((docs / "a.txt").resolve()), str(docs.resolve() / "link.txt")]

    (docs / "link.txt").unlink()
    report = json.loads(run("ingest", "d", "--json", cwd=tmp_path).stdout)
    assert report["removed"] == 1 and sources(tmp_path) == ["a.txt"]

    (docs / "link.txt").symlink_to(outside)
    skipped = run("ingest", "d", cwd=tmp_path, env={"RAGLOOM_INGEST__EXTERNAL_LINKS": "skip"})
    assert "link.txt: a symlink to" in skipped.stderr and "external_links: skip" in skipped.stderr
    assert sources(tmp_path) == ["a.txt"]


# --- items 8-9: output never crashes on text, one error is one line ----------------------------


@pytest.fixture(scope="module")
def bracket_index(tmp_path_factory) -> Path:
    """An index holding a file named ``x[/y].txt`` (a folder ``x[`` with ``y].txt`` in it)."""
    root = tmp_path_factory.mktemp("brackets")
    (root / "d" / "x[").mkdir(parents=True)
    (root / "d" / "x[" / "y].txt").write_text("robots [/] read [bold]markup[/bold] :smile: literally")
    result = run("ingest", "d", cwd=root)  # the table report names the file
    assert "files added" in result.stdout
    return root


def test_paths_snippets_and_queries_with_markup_print_as_they_are(bracket_index):
    status = run("status", "--sources", cwd=bracket_index)
    assert "d/x[/y].txt" in status.stdout
    table = run("search", "robot [/]", cwd=bracket_index, columns=120)
    assert "x[/y].txt" in table.stdout and "[bold]markup[/bold] :smile:" in table.stdout  # shown relative to d/
    audit = run("audit", cwd=bracket_index, columns=200)
    assert "robot [/]" in audit.stdout and "d/x[/y].txt" in audit.stdout
    error = run("-e", "x[/y]", "search", "robots", cwd=bracket_index, check=False)
    assert "no embedder named 'x[/y]'" in one_line_error(error)


def test_error_messages_keep_brackets_and_stay_on_one_line(capsys):
    from ragloom.cli.app import _report_error
    from ragloom.errors import MissingDependencyError, SourceNotFoundError

    assert _report_error(MissingDependencyError("ir-measures", "eval", "ragloom eval " + "x" * 80)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'ragloom[eval]'" in err

    assert _report_error(SourceNotFoundError("bad\udcff.txt")) == 1  # a file name that is not UTF-8
    assert capsys.readouterr().err.startswith("error: bad\\xff.txt: no such file")

    assert _report_error(ValueError("boom\nsecond line")) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unexpected ValueError: boom second line" in err and "--debug" in err


def test_debug_shows_the_traceback(tmp_path):
    plain = run("search", "x", "--where", "a>>b", cwd=tmp_path, check=False)
    assert "'>>' is not an operator" in one_line_error(plain)
    debug = run("search", "x", "--where", "a>>b", "--debug", cwd=tmp_path, check=False)
    assert "Traceback" in debug.stderr and debug.stderr.rstrip().endswith("use one of =, !=, <, <=, >, >=, *=, ~ "
                                                                          "(quote a value that starts with one of '<>=!~')")


def test_the_search_table_is_readable_at_80_and_200_columns(bracket_index):
    for width in (80, 200):
        out = run("search", "robots", "--table", cwd=bracket_index, columns=width).stdout
        lines = out.splitlines()
        assert all(len(line) <= width for line in lines)
        header = next(line for line in lines if "passage" in line)
        # The passage gets most of the width: at 80 columns it had 21 before.
        assert width - header.index("passage") >= width // 2


# --- items 14-18: CLI and config -------------------------------------------------------------------


def test_remove_refuses_an_empty_path_and_asks_before_removing_a_folder(tmp_path):
    docs = tmp_path / "d"
    docs.mkdir()
    for name in ("a.txt", "b.txt"):
        (docs / name).write_text(f"text of {name} about robots")
    run("ingest", "d", cwd=tmp_path)
    for empty in ("", "   "):
        assert "the path is empty" in one_line_error(run("remove", empty, cwd=tmp_path, check=False))
    refused = run("remove", "d", cwd=tmp_path, check=False)
    assert refused.returncode == 1 and "matches 2 sources" in refused.stderr and "pass --yes" in refused.stderr
    assert "d/a.txt" in refused.stdout and "d/b.txt" in refused.stdout
    listed = run("remove", "d", "--dry-run", cwd=tmp_path)
    assert listed.stdout.count("would remove") == 2
    assert sources(tmp_path) == ["a.txt", "b.txt"]
    removed = run("remove", "d", "--yes", cwd=tmp_path)
    assert removed.stdout.count("removed") == 2 and sources(tmp_path) == []


def test_bad_config_files_and_arguments_are_one_line_errors(tmp_path):
    cases = {
        ("-c", str(tmp_path), "status"): "is a folder, not a config file",
        ("-c", "latin1.yaml", "status"): "latin1.yaml is not UTF-8 text",
        ("-c", "broken.yaml", "status"): "broken.yaml:3:6: invalid YAML: expected ',' or ']'",
        ("init", "/no/such/dir/ragloom.yaml"): "the folder /no/such/dir does not exist",
        ("search", "x", "--where", "page>>2"): "'>>' is not an operator",
        ("audit", "--last", "-1"): "--last",
        ("audit", "--last", "1e20"): "--last",
    }
    (tmp_path / "latin1.yaml").write_bytes(b"search:\n  k: 3 # caf\xe9\n")
    (tmp_path / "broken.yaml").write_text("search:\n  k: [1\n mode: dense\n")
    for args, expected in cases.items():
        result = run(*args, cwd=tmp_path, check=False)
        no_traceback(result)
        assert result.returncode != 0 and expected in result.stderr, (args, result.stderr)
        one_line_error(result)


def test_audit_with_a_huge_count_lists_everything(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("lidar odometry")
    run("ingest", "d", cwd=tmp_path)
    run("search", "lidar", cwd=tmp_path)
    result = run("audit", "--last", "100000000000000000000", "--kind", "search", "--json", cwd=tmp_path)
    assert [entry["query"] for entry in json.loads(result.stdout)] == ["lidar"]
    everything = json.loads(run("audit", "--last", "100000000000000000000", "--json", cwd=tmp_path).stdout)
    assert len(everything) > 1  # the ingest's writes are listed too


def test_documented_environment_variables_are_accepted_and_typos_rejected(tmp_path):
    from ragloom.config import NON_CONFIG_ENV, check_keys, env_overrides
    from ragloom.errors import UnknownConfigKeyError

    env = {"RAGLOOM_CACHE_DIR": str(tmp_path / "cache"), "RAGLOOM_TORCH_INDEX": "https://download.pytorch.org/whl/cpu"}
    init = run("init", cwd=tmp_path, env=env)
    assert "wrote ragloom.yaml" in init.stdout
    ok = run("status", cwd=tmp_path, check=False, env=env)
    assert "unknown setting" not in ok.stderr
    typo = run("status", cwd=tmp_path, check=False, env={"RAGLOOM_SERCH__K": "3"})
    assert "unknown setting 'serch'" in one_line_error(typo)

    # Every RAGLOOM_* name the project mentions is a setting or a known non-setting variable.
    mentioned: set[str] = set()
    for folder in ("src", "scripts", "docs", "examples", "benchmarks"):
        for file in (REPO / folder).rglob("*"):
            if file.is_file() and file.suffix in (".py", ".sh", ".md", ".yaml", ".txt", ""):
                mentioned |= set(re.findall(r"RAGLOOM_[A-Z][A-Z0-9_]*[A-Z0-9]", file.read_text(errors="ignore")))
    mentioned |= set(re.findall(r"RAGLOOM_[A-Z][A-Z0-9_]*[A-Z0-9]", (REPO / "README.md").read_text()))
    examples = {"RAGLOOM_SECTION__KEY", "RAGLOOM_SERCH__K", "RAGLOOM_SEARCH__NOPE"}  # placeholders and typos
    assert {"RAGLOOM_CACHE_DIR", "RAGLOOM_TORCH_INDEX"} <= mentioned
    for name in sorted(mentioned - NON_CONFIG_ENV - examples):
        try:
            check_keys(Config, env_overrides({name: "1"}), name)
        except UnknownConfigKeyError:
            pytest.fail(f"{name} is mentioned in the project but is no setting: add it to config.NON_CONFIG_ENV")


def test_global_options_work_after_the_command(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("lidar odometry")
    run("ingest", "d", "--embedder", "onnx", "-i", "ix", "--quiet", cwd=tmp_path)
    hits = json.loads(run("search", "lidar", "--json", "--index=ix", cwd=tmp_path).stdout)
    assert Path(hits[0]["source"]).name == "a.txt"


def test_global_options_are_moved_only_where_the_command_does_not_define_them():
    import typer

    from ragloom.cli.app import _register_commands, app
    from ragloom.cli.arguments import hoist_global_options

    _register_commands()
    group = typer.main.get_command(app)
    assert hoist_global_options(["ingest", "docs", "-e", "onnx", "--debug"], group) == \
        ["-e", "onnx", "--debug", "ingest", "docs"]
    assert hoist_global_options(["-i", "ix", "eval", "data", "-c", "a.yaml", "--index", "x"], group) == \
        ["-i", "ix", "--index", "x", "eval", "data", "-c", "a.yaml"]
    assert hoist_global_options(["search", "-k", "3", "--", "-e"], group) == ["search", "-k", "3", "--", "-e"]
    assert hoist_global_options(["search", "-w", "-i", "q"], group) == ["search", "-w", "-i", "q"]


def test_store_shorthand_in_the_config_file(tmp_path):
    (tmp_path / "ragloom.yaml").write_text("store: chroma\n")
    config = Config.load(tmp_path / "ragloom.yaml", env={"RAGLOOM_STORE__CHROMA__COLLECTION": "notes"})
    assert config.store.backend == "chroma" and config.store.chroma.collection == "notes"
    assert Config.from_dict({"store": "qdrant"}).store.backend == "qdrant"


def test_pdf_library_warnings_name_the_file(tmp_path):
    (tmp_path / "d").mkdir()
    pdf = write_pdf(tmp_path / "d" / "damaged.pdf", ["Lidar odometry drifts over long runs.", "Page two."])
    data = pdf.read_bytes()
    offset = re.search(rb"startxref\n(\d+)", data)
    assert offset is not None  # a wrong xref offset: PDFium recovers (silently; pypdf said so once per file)
    pdf.write_bytes(data.replace(b"startxref\n" + offset.group(1), b"startxref\n0"))
    result = run("ingest", "d", cwd=tmp_path)
    warnings = [line for line in result.stderr.splitlines() if line.strip()]
    assert all(line.startswith(f"warning: {pdf.resolve()}: ") for line in warnings), result.stderr
    assert sources(tmp_path) == ["damaged.pdf"]
