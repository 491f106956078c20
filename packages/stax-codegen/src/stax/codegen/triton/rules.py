"""Every module of Triton emitters, imported explicitly: importing one registers the emitters it
defines (``registry``). The kernel writer imports this module, so the tables are complete before
anything is emitted; ``tests/test_triton_target.py`` fails if a module is left out here."""

from __future__ import annotations

from . import arithmetic, bits, functions

EMITTER_MODULES = (arithmetic, bits, functions)
