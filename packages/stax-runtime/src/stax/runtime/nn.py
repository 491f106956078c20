"""Functions NumPy lacks. Each is one capture node when traced and plain NumPy otherwise, so a
program behaves the same compiled or not. Their semantics are declared in ``stax.ir.ops``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stax.ir import NN_FUNCTIONS
from stax.trace import leaf_function


def _export(name: str, doc: str) -> Callable[..., Any]:
    target = f"stax.nn.{name}"
    fn = leaf_function(target)(NN_FUNCTIONS[target])
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__
    fn.__doc__ = doc
    return fn


relu = _export("relu", "relu(x) = np.maximum(x, 0): NaN stays NaN, dtype as NumPy's maximum.")
selu = _export("selu", "selu(x) = scale * where(x > 0, x, alpha * (exp(x) - 1)) "
               "(alpha = 1.6732632423543772, scale = 1.0507009873554805).")

mse_loss = _export("mse_loss", "mse_loss(x, y) = mean((x - y) ** 2) over all elements.")
layer_norm = _export("layer_norm", "layer_norm(x, normalized_shape, weight=None, bias=None, "
                     "eps=1e-5): normalize over the last len(normalized_shape) axes.")

__all__ = ["layer_norm", "mse_loss", "relu", "selu"]
