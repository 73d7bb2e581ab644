"""The path policy of the doors: odd paths named in a request, and the check where each file is opened."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ragloom.ingest.files import FileRejected, read_regular_file, walk
from ragloom.paths import PathError, PathPolicy

LIMIT = 1_000_000


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "sub" / "a.md").write_text("inside")
    (outside / "a.md").write_text("secret")
    return root, outside


def test_odd_paths_are_refused_with_stable_codes(tree):
    root, _ = tree
    (root / "loop.md").symlink_to("loop.md")
    (root / "sub" / "up").symlink_to("..")  # a folder that holds itself
    (root / "sub" / "here").symlink_to(".")
    (root / "sub" / "down").symlink_to("../sub")
    policy = PathPolicy([root])
    cases = {
        f"{root}/a\x00b.md": ("path_invalid", 422),
        f"{root}/bad\ud800.md": ("path_invalid", 422),
        f"{root}/{'x' * 256}.md": ("path_name_too_long", 422),
        str(root) + ("/" + "y" * 200) * 21: ("path_too_long", 422),
        f"{root}/loop.md": ("path_symlink_loop", 422),
        f"{root}/sub/a.md/deeper.md": ("path_not_found", 404),
        f"{root}/sub/up": ("path_symlink_loop", 422),
        f"{root}/sub/here": ("path_symlink_loop", 422),
        f"{root}/sub/down": ("path_symlink_loop", 422),
    }
    for raw, expected in cases.items():
        with pytest.raises(PathError) as caught:
            policy.resolve(raw)
        assert (caught.value.code, caught.value.status) == expected, raw[:60]
        assert str(caught.value)
    # A folder reached through ".." is not a link, and a link to a sibling folder holds no loop.
    (root / "other").mkdir()
    (root / "other" / "sub-link").symlink_to("../sub")
    assert policy.resolve(f"{root}/sub/..") == root.resolve()
    assert policy.resolve(f"{root}/other/sub-link") == (root / "sub").resolve()


def test_a_file_opened_outside_the_roots_is_refused_by_its_descriptor(tree):
    root, outside = tree
    policy = PathPolicy([root])
    fd = os.open(outside / "a.md", os.O_RDONLY)
    try:  # whatever path the file was opened as, the descriptor tells where it is
        assert "outside" in policy.refusal(fd, root / "sub" / "a.md")
    finally:
        os.close(fd)
    fd = os.open(root / "sub" / "a.md", os.O_RDONLY)
    try:
        assert policy.refusal(fd, root / "sub" / "a.md") is None
    finally:
        os.close(fd)


def test_a_link_swapped_in_after_the_walk_is_refused_where_the_file_is_opened(tree):
    root, outside = tree
    policy = PathPolicy([root])
    listed = list(walk(root, ["**/*"], [], on_error=lambda where, why: None, policy=policy))
    assert listed == [root / "sub" / "a.md"]
    # Between the walk and the read, the folder becomes a link leading out.
    (root / "sub" / "a.md").unlink()
    (root / "sub").rmdir()
    (root / "sub").symlink_to(outside)
    with pytest.raises(FileRejected) as caught:
        read_regular_file(listed[0], LIMIT, policy)
    assert "refused" in str(caught.value) and "secret" not in str(caught.value)
    assert read_regular_file(listed[0], LIMIT).data == b"secret"  # without a policy (the CLI), links are followed


def test_the_walk_reports_links_out_and_loops_and_lists_the_rest(tree):
    root, outside = tree
    (root / "sub" / "leak.md").symlink_to(outside / "a.md")
    (root / "sub" / "self.md").symlink_to("self.md")
    (root / "sub" / "ok.md").symlink_to(root / "sub" / "a.md")  # a link that stays inside is fine
    refused: list[tuple[str, str]] = []
    policy = PathPolicy([root])
    listed = list(walk(root, ["**/*.md"], [], on_error=lambda where, why: None, policy=policy,
                       on_refused=lambda where, why: refused.append((where, why))))
    assert [p.name for p in listed] == ["a.md", "ok.md", "self.md"]  # the loop is the reader's to report
    assert [Path(where).name for where, _ in refused] == ["leak.md"] and "outside" in refused[0][1]
    with pytest.raises(FileRejected) as caught:
        read_regular_file(root / "sub" / "self.md", LIMIT, policy)
    assert "symlink loop" in str(caught.value)


def test_a_folder_link_met_in_the_walk_is_reported_as_a_loop_or_skipped_with_a_line(tree):
    """A symlink to a folder is not walked into: one leading to a folder that holds it is a loop,
    any other is skipped with a line naming the folder to ingest (never silently)."""
    root, outside = tree
    (root / "sub" / "up").symlink_to("..")  # holds itself
    (root / "sub" / "here").symlink_to(".")
    (root / "twin").symlink_to("sub")  # the same files under a second name
    (root / "away").symlink_to(outside)
    errors: list[tuple[str, str]] = []
    skipped: list[tuple[str, str]] = []
    listed = list(walk(root, ["**/*.md"], [], on_error=lambda where, why: errors.append((where, why)),
                       on_skip=lambda where, why: skipped.append((where, why))))
    assert listed == [root / "sub" / "a.md"]
    assert sorted(Path(where).name for where, _ in errors) == ["here", "up"]
    assert all("symlink loop" in why for _, why in errors)
    assert all(Path(where).parent.name in ("sub", root.name) for where, _ in errors + skipped)  # the link's path
    assert sorted(Path(where).name for where, _ in skipped) == ["away", "twin"]
    assert all("skipped: a symlink to the folder" in why and "ingest that folder" in why for _, why in skipped)
