"""Retrieval evaluation: BEIR datasets and keyword test sets (``ragloom eval``)."""

from .beir import BeirDataset, DatasetError, load_beir
from .keywords import KeywordCase, KeywordResult, evaluate_keywords, load_keyword_cases
from .runner import EvalResult, RunResult, RunSpec, evaluate_beir

__all__ = [
    "BeirDataset", "DatasetError", "EvalResult", "KeywordCase", "KeywordResult", "RunResult", "RunSpec",
    "evaluate_beir", "evaluate_keywords", "load_beir", "load_keyword_cases",
]
