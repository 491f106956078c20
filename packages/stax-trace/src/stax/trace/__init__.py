"""stax.trace — capture of NumPy programs by proxy tracing in mixed mode (spec §3)."""

from .proxy import Proxy
from .tracer import example_copy, leaf_function, trace

__version__ = "0.1.0"

__all__ = ["Proxy", "example_copy", "leaf_function", "trace"]
