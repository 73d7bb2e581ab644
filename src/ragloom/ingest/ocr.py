"""Optical character recognition with Tesseract, for scanned PDF pages and photos of pages.

Tesseract (Debian's ``tesseract-ocr``, Apache-2.0) was measured against RapidOCR (ONNX models in
its wheel) on SciFact pages rendered at 200 dpi with noise: character error rate 0.001 against
0.23 (RapidOCR joins the words of a line), and faster (BENCHMARKS.md "Documents"). It runs as a
separate process per page, one thread each, so pages are read in parallel on every core.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import LoaderError

if TYPE_CHECKING:
    from PIL.Image import Image

#: Seconds one page may take before it is given up.
PAGE_TIMEOUT = 120
INSTALL_HINT = (
    "OCR needs Tesseract: install it with `sudo apt-get install tesseract-ocr` (Debian/Ubuntu), "
    "`brew install tesseract` (macOS) or `scripts/setup.sh`, then ingest again"
)


@dataclass(frozen=True)
class OcrPage:
    text: str
    #: Mean word confidence, 0–1 (Tesseract's 0–100 scaled); 0 when no word was found.
    confidence: float


class OcrUnavailableError(LoaderError):
    pass


def available() -> bool:
    return shutil.which("tesseract") is not None


def workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def recognize(images: list[Image], languages: str = "eng") -> list[OcrPage]:
    """The text of each image, in order; pages run in parallel, one Tesseract process each."""
    if not available():
        raise OcrUnavailableError(INSTALL_HINT)
    if len(images) == 1:
        return [_recognize(images[0], languages)]
    with ThreadPoolExecutor(max_workers=min(workers(), len(images))) as pool:
        return list(pool.map(lambda image: _recognize(image, languages), images))


def _recognize(image: Image, languages: str) -> OcrPage:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    try:
        done = subprocess.run(
            ["tesseract", "stdin", "stdout", "-l", languages, "--psm", "3", "tsv"],
            input=buffer.getvalue(), capture_output=True, timeout=PAGE_TIMEOUT, env=env, check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise LoaderError(f"OCR of a page took over {PAGE_TIMEOUT} s and was stopped") from exc
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise LoaderError(f"Tesseract failed on a page: {said[-1] if said else done.returncode}")
    return parse_tsv(done.stdout.decode("utf-8", "replace"))


def parse_tsv(tsv: str) -> OcrPage:
    """Tesseract's TSV as text: words joined by spaces, lines by newlines, paragraphs by blank lines."""
    lines: list[str] = []
    words: list[str] = []
    confidences: list[float] = []
    current: tuple[str, ...] | None = None
    paragraph: tuple[str, ...] | None = None
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        if row.get("level") != "5" or not (row.get("text") or "").strip():
            continue
        line = (row["page_num"], row["block_num"], row["par_num"], row["line_num"])
        if line != current:
            if words:
                lines.append(" ".join(words))
            if paragraph is not None and line[:3] != paragraph:
                lines.append("")
            words, current, paragraph = [], line, line[:3]
        words.append(row["text"].strip())
        try:
            confidences.append(max(0.0, float(row["conf"])) / 100)
        except (TypeError, ValueError):
            pass
    if words:
        lines.append(" ".join(words))
    confidence = sum(confidences) / len(confidences) if confidences else 0.0
    return OcrPage("\n".join(lines).strip(), round(confidence, 4))
