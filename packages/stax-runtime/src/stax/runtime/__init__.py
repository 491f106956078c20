"""stax.runtime — ``compile``: specialization cache, dispatch, fallback (spec §2)."""

from stax.ir import StaxError, UnsupportedError
from stax.trace import gate

from . import lifted_loops, lifted_while, nn  # noqa: F401 - they install the loop lifters
from .api import CompiledFunction
from .autodiff import grad, value_and_grad, vjp
from .backends import BACKENDS, register_backend
from .compiling import compile
from .versions import CacheInfo, Limits, Version, VersionReport

__version__ = "0.1.0"

__all__ = ["BACKENDS", "CacheInfo", "CompiledFunction", "Limits", "StaxError", "UnsupportedError",
           "Version", "VersionReport", "compile", "gate", "grad", "nn", "register_backend",
           "value_and_grad", "vjp"]
