"""stax.trace — capture of NumPy programs by proxy tracing in mixed mode (spec §3)."""

from . import traced_len  # noqa: F401 (intercepts len while captures run)
from .examples import example_copy
from .outcome import Outcome
from .proxy import Proxy
from .tracer import gate, leaf_function, leaf_names, trace

__version__ = "0.1.0"

__all__ = ["Outcome", "Proxy", "example_copy", "gate", "leaf_function", "leaf_names", "trace"]
