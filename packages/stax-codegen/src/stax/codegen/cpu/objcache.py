"""The disk cache's old place, kept for ``executable.py`` until it imports ``stax.codegen.diskcache``
(then this module goes)."""

from ..diskcache import DiskCache as ObjectCache

__all__ = ["ObjectCache"]
