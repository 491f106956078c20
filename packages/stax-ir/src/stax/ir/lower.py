"""Kept only for ``stax.loop.lowering``'s import of ``rebase_view`` (``from stax.ir.lower import
rebase_view``) until it reads ``stax.ir.rebase_view``; then delete this module. Capture-to-op
lowering is ``stax.ir.to_opgraph``."""

from .views import rebase_view

__all__ = ["rebase_view"]
