"""Every module of CPU emitters, imported explicitly: importing one registers the emitters it
defines (``registry``). The kernel emitter imports this module, so the tables are complete before
anything is emitted; ``tests/test_emitters.py`` fails if a module is left out here."""

from __future__ import annotations

from . import accumulators, arg_blocks, arithmetic, bitwise, comparisons, division, functions

EMITTER_MODULES = (accumulators, arg_blocks, arithmetic, bitwise, comparisons, division, functions)
