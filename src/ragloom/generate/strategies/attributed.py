"""Attributed answers: every sentence cites, and every citation is validated.

A cited number that is not in the context is removed; each sentence is then checked
against the passages it cites (``answer.support_checker``), and sentences that no cited
passage supports are flagged in ``Answer.sentences`` (and dimmed by the CLI).
"""

from __future__ import annotations

from typing import ClassVar

from .standard import Standard


class Attributed(Standard):
    name: ClassVar[str] = "attributed"
    template: ClassVar[str] = "attributed"
    check: ClassVar[bool] = True
