"""git sources: a repository made in the test with the git command, cloned by URL (file:// and git
daemon on 127.0.0.1); commits that add, change, rename and delete files between syncs."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the git command is not installed")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@example.org", "PATH": "/usr/bin:/bin",
                               "HOME": str(repo.parent)}).stdout.strip()


def commit(repo: Path, files: dict[str, str | None], message: str) -> str:
    for name, text in files.items():
        path = repo / name
        if text is None:
            git(repo, "rm", "-q", name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RAGLOOM_CACHE_DIR", str(tmp_path / "cache"))
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    return repo


def test_commits_that_add_change_rename_and_delete_are_followed(repo: Path, index_at) -> None:
    first_commit = commit(repo, {
        "README.md": "# Widgets\n\nWidgets are assembled on line four.\n",
        "src/pump.py": "def prime_pump(litres):\n    \"\"\"Fill the pump with water before starting it.\"\"\"\n"
                       "    return litres * 2\n",
        "docs/old-name.md": "# Valves\n\nValves are greased every spring.\n",
        "image.bin": "not a document",
    }, "first")
    uri = f"git+{repo.as_uri()}@main"
    index = index_at()
    first = index.sync(uri)
    assert first.status == "ok" and first.skipped == ["image.bin"]
    url = repo.as_uri()
    assert sorted(first.added) == [f"git+{url}@{first_commit}:{p}" for p in ("README.md", "docs/old-name.md",
                                                                             "src/pump.py")]
    hit = index.search("how do I prime the pump", k=1)[0]
    assert hit.source == f"git+{url}@{first_commit}:src/pump.py"
    assert (hit.metadata["commit"], hit.metadata["ref"], hit.metadata["path"]) == (first_commit, "main", "src/pump.py")
    assert hit.metadata["start_line"] == 1

    same = index.sync(uri)
    assert same.bytes_downloaded == 0 and len(same.unchanged) == 3 and not (same.added or same.removed)

    second_commit = commit(repo, {"README.md": "# Widgets\n\nWidgets are assembled on line seven now.\n",
                                  "docs/changelog.md": "# Changes\n\nThe conveyor belt was replaced.\n"}, "second")
    git(repo, "mv", "docs/old-name.md", "docs/valves.md")
    git(repo, "rm", "-q", "src/pump.py")
    git(repo, "commit", "-q", "-m", "rename and delete")
    third_commit = git(repo, "rev-parse", "HEAD")
    changed = index.sync(uri)
    assert second_commit != third_commit
    assert changed.updated == [f"git+{url}@{third_commit}:README.md"]
    assert sorted(changed.added) == [f"git+{url}@{third_commit}:docs/changelog.md",
                                     f"git+{url}@{third_commit}:docs/valves.md"]
    assert sorted(changed.removed) == [f"git+{url}@{first_commit}:docs/old-name.md",
                                       f"git+{url}@{first_commit}:src/pump.py"]
    assert {r.path for r in index.store.list_sources()} == {
        f"git+{url}@{third_commit}:README.md", f"git+{url}@{third_commit}:docs/changelog.md",
        f"git+{url}@{third_commit}:docs/valves.md"}
    assert "line seven" in index.search("which line are widgets assembled on", k=1)[0].text
    assert changed.chunks_embedded <= 3  # the renamed file's text was embedded before: its vector is reused
    state = index.store.sync_state().remote_source(uri)
    assert state.cursor == {"commit": third_commit, "ref": "main"}


@pytest.fixture
def git_daemon(tmp_path: Path, repo: Path):
    """``git daemon`` serving ``repo``'s folder on a free port of 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", "--export-all", "--listen=127.0.0.1", f"--port={port}",
         f"--base-path={repo.parent}", str(repo.parent)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.1)
    try:
        yield f"git://127.0.0.1:{port}/{repo.name}"
    finally:
        process.terminate()
        process.wait(10)


def test_a_repository_served_by_git_daemon(repo: Path, git_daemon: str, index_at, tmp_path: Path, embedder) -> None:
    head = commit(repo, {"notes/tides.md": "# Tides\n\nSpring tides follow the full moon.\n"}, "tides")
    index = index_at()
    report = index.sync(f"git+{git_daemon}@main")
    assert report.added == [f"git+{git_daemon}@{head}:notes/tides.md"]
    # The same daemon, with private addresses refused: one line, nothing fetched.
    from ragloom import Index
    from ragloom.config import Config

    config = Config.from_dict({"index": str(tmp_path / "strict")})
    with Index.open(tmp_path / "strict", config, embedder=embedder) as strict:
        refused = strict.sync(f"git+{git_daemon}@main")
        assert refused.status == "failed" and "loopback address: refused" in refused.error


def test_a_missing_repository_or_ref_is_one_line_and_removes_nothing(repo: Path, index_at) -> None:
    commit(repo, {"a.md": "Anchors hold the boat.\n"}, "a")
    index = index_at()
    assert len(index.sync(f"git+{repo.as_uri()}@main").added) == 1
    missing_ref = index.sync(f"git+{repo.as_uri()}@no-such-branch")
    assert missing_ref.status == "failed" and "git fetch failed" in missing_ref.error and "\n" not in missing_ref.error
    gone = index.sync(f"git+{repo.as_uri()}-moved@main")
    assert gone.status == "failed" and gone.removed == []
    assert len(index.store.list_sources()) == 1
