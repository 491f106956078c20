"""Stax's log lines: the ``stax`` logger, with a stderr handler when ``STAX_LOGS`` asks for any."""

from __future__ import annotations

import logging

logger = logging.getLogger("stax")


def emit(category: str, enabled: frozenset[str], message: str) -> None:
    """Log ``message`` under ``stax.<category>`` when that category is enabled."""
    if category not in enabled:
        return
    _ensure_handler()
    logging.getLogger(f"stax.{category}").info(message)


def warn(message: str) -> None:
    """A line every user sees (fallbacks): a warning on the ``stax`` logger."""
    logger.warning(message)


def _ensure_handler() -> None:
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
