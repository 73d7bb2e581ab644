"""Answer strategies: extractive (no LLM), standard, attributed and chain-of-verification (cove).

Each is registered under the role ``strategy``, so a plugin adds one by entry point
(group ``ragloom.strategys``) or ``registry.register("strategy", name, cls)``.
"""

from ... import registry
from .base import AnswerRequest, Strategy


def create_strategy(name: str) -> Strategy:
    return registry.resolve("strategy", name)()


def strategy_names() -> list[str]:
    return registry.names("strategy")


__all__ = ["AnswerRequest", "Strategy", "create_strategy", "strategy_names"]
