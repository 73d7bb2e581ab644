"""Images of text (``.png``, ``.jpg``, ``.tiff``: scans, photos of pages, screenshots) through OCR.

Each frame of a multi-page TIFF is a page. The text is read by Tesseract (``ingest/ocr.py``);
its mean confidence is in every chunk's metadata (``ocr_confidence``). An image in which no
text is found gives no document and a warning.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from ...errors import CorruptDocumentError
from ...types import Document
from .. import ocr
from .base import Loader, LoadResult
from .pdf import join_pages

#: Images larger than this many pixels are refused (a decompression bomb is a few KB on disk).
MAX_PIXELS = 80_000_000
MAX_FRAMES = 500


class ImageLoader(Loader):
    name = "image"
    extensions = (".png", ".jpg", ".jpeg", ".tif", ".tiff")
    version = 1

    def policy(self) -> str:
        return f"image/ocr={self.options.ocr}"

    def load(self, path: Path, source: str) -> LoadResult:
        if self.options.ocr == "never":
            return LoadResult([], [f"{source} is an image and ingest.ocr is never; it was not read"])
        frames = _frames(path, source)
        pages = ocr.recognize(frames, self.options.ocr_languages)
        text, starts = join_pages([page.text for page in pages])
        if not text.strip():
            return LoadResult([], [f"{source}: OCR found no text in the image"])
        document = Document(
            text=text,
            source=source,
            doc_id=path.name,
            title=path.stem,
            metadata={"pages": len(pages), "ocr_pages": len(pages)},
            page_starts=starts if len(pages) > 1 else (),
            page_metadata=tuple({"ocr_confidence": page.confidence} for page in pages),
        )
        return LoadResult([document], stats={"ocr_pages": len(pages)})


def _frames(path: Path, source: str) -> list:
    from PIL import Image, ImageSequence, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as image:
                if image.width * image.height > MAX_PIXELS:
                    raise CorruptDocumentError(
                        f"{source} is {image.width}x{image.height} pixels (at most {MAX_PIXELS:,} are read); "
                        "scale it down to read it"
                    )
                frames = []
                for number, frame in enumerate(ImageSequence.Iterator(image)):
                    if number >= MAX_FRAMES:
                        break
                    frames.append(frame.convert("L"))
                return frames
    except CorruptDocumentError:
        raise
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise CorruptDocumentError(
            f"{source} could not be read as an image ({type(exc).__name__}: {exc}); it may be damaged"
        ) from exc
