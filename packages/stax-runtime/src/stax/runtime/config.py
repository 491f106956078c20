"""Settings from the environment, read in exactly one place (STYLE.md habit 8).

``STAX_LOGS``      comma list of: recompiles, graph, passes, loop, kernels, perf (or "all")
``STAX_DUMP_DIR``  write each compile's four documents there
``STAX_CACHE_DIR`` on-disk cache of compiled machine code (default ~/.cache/stax; "off" disables)
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from stax.codegen.diskcache import directory_from_environment

LOG_CATEGORIES = ("recompiles", "graph", "passes", "loop", "loops", "kernels", "perf", "autodiff")
_reported: set[tuple[str, ...]] = set()  # unknown STAX_LOGS categories already warned about


@dataclass(frozen=True)
class Settings:
    logs: frozenset[str]
    dump_dir: Path | None
    cache_dir: Path | None

    @classmethod
    def from_env(cls) -> Settings:
        raw = {c.strip() for c in os.environ.get("STAX_LOGS", "").split(",") if c.strip()}
        unknown = sorted(raw - set(LOG_CATEGORIES) - {"all"})
        if unknown and tuple(unknown) not in _reported:
            _reported.add(tuple(unknown))
            logging.getLogger("stax").warning(
                "stax: STAX_LOGS names unknown categor%s %s; known: %s, all",
                "y" if len(unknown) == 1 else "ies", ", ".join(map(repr, unknown)),
                ", ".join(LOG_CATEGORIES))
        logs = frozenset(LOG_CATEGORIES) if "all" in raw else frozenset(raw & set(LOG_CATEGORIES))
        dump = os.environ.get("STAX_DUMP_DIR")
        return cls(logs, Path(dump) if dump else None, directory_from_environment())


def current() -> Settings:
    """The settings now (compiles are rare, so the environment is read at each one)."""
    return Settings.from_env()
