"""stax.runtime — ``compile``: specialization cache, dispatch, fallback (spec §2)."""

from stax.ir import StaxError, UnsupportedError

from . import nn
from .api import CacheInfo, CompiledFunction, Version, compile
from .backends import BACKENDS, register_backend

__version__ = "0.1.0"

__all__ = ["BACKENDS", "CacheInfo", "CompiledFunction", "StaxError", "UnsupportedError", "Version",
           "compile", "nn", "register_backend"]
