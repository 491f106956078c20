"""What a capture run leaves behind besides its graph: the array arguments it traced
(``Argument``) and, for the call that made it, what eager execution would have returned
(``Outcome``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stax.ir import tree_flatten, tree_unflatten
from stax.ir.pytree import is_namedtuple

from .proxy import Proxy


@dataclass
class Argument:
    """An array argument: its placeholder, the example copy it started as, and whether the
    caller's array may be written (an in-place update of it is written back at the end)."""

    node: Any
    example: np.ndarray
    writeable: bool
    proxy: Proxy


@dataclass
class Outcome:
    """What a capture run computed for the call that made it.

    Capture runs the function once on the real arguments (mixed mode), so for that call it *is* the
    eager execution: its Python side effects (a list appended to, an attribute set, a print) have
    happened. When the compile then fails, the caller takes this call's result from here instead of
    running the function a second time, which would repeat those side effects."""

    finished: bool = False  # the function returned (whatever capture made of its result)
    result: Any = None
    arguments: list[tuple[Argument, np.ndarray]] = field(default_factory=list)  # (proxy, caller's)
    generators: list[tuple[np.random.Generator, np.random.Generator]] = field(default_factory=list)
    warnings: Any = None  # the NumPy reports capture held back
    # arrays the caller owns that capture does not trace (an argument object's attribute), with
    # their contents before it ran: a capture refused midway may have updated them in place
    untraced_arrays: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    # the attribute dictionaries of argument objects, with a copy of each: a capture refused
    # midway has run the assignments before that point (``self.calls += 1``)
    attributes: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)

    def keep_contents(self, arrays: list[np.ndarray],
                      attributes: list[dict[str, Any]] | None = None) -> None:
        self.untraced_arrays = [(a, a.copy()) for a in arrays if a.flags.writeable]
        self.attributes = [(d, dict(d)) for d in attributes or ()]

    def undo_untraced_updates(self) -> None:
        """Put back what a capture that did not finish wrote into untraced arrays and into the
        attributes of argument objects, so that the eager run that follows starts from the
        caller's state (it would otherwise apply an update such as ``cfg.w += 1`` or
        ``self.calls += 1`` a second time)."""
        for array, before in self.untraced_arrays:
            np.copyto(array, before)
        for attributes, before in self.attributes:
            if attributes.keys() != before.keys() or any(
                    attributes[k] is not v for k, v in before.items()):
                attributes.clear()
                attributes.update(before)

    def eager_result(self) -> tuple[bool, Any]:
        """``(True, result)`` as eager execution would have left things — arguments updated in
        place written to the caller's arrays, generators advanced, NumPy's reports given — or
        ``(False, None)`` when the result cannot stand for eager's (it views an argument, whose
        eager form would be a writeable view of the caller's array)."""
        if not self.finished:
            return False, None
        leaves, tree = tree_flatten(self.result)
        examples = {id(a.proxy): caller for a, caller in self.arguments}

        def concrete(leaf: Any) -> Any:
            if is_namedtuple(leaf):
                return type(leaf)(*map(concrete, leaf))
            if isinstance(leaf, Proxy):
                if id(leaf) in examples:  # the argument itself, updated in place or not (its
                    return examples[id(leaf)]  # final value is copied into it below)
                leaf = leaf.value
            if isinstance(leaf, np.ndarray) and any(
                    np.may_share_memory(leaf, a.example) or (
                        isinstance(a.proxy.value, np.ndarray) and
                        np.may_share_memory(leaf, a.proxy.value)) for a, _ in self.arguments):
                raise _CannotStand  # a view of an argument: eager's views the caller's array
            if not isinstance(leaf, _PLAIN):  # a generator, a function, an object: it may
                raise _CannotStand  # hold traced values, dead once capture is over
            return leaf

        try:
            out = [concrete(leaf) for leaf in leaves]
        except _CannotStand:
            return False, None
        for argument, caller in self.arguments:
            if argument.proxy.node is not argument.node:  # updated in place during capture
                np.copyto(caller, argument.proxy.value)
        for caller, private in self.generators:
            caller.bit_generator.state = private.bit_generator.state
        if self.warnings is not None:
            self.warnings.emit()
        return True, tree_unflatten(tree, out)


#: result leaves that hold no traced value
_PLAIN = (np.ndarray, np.generic, np.dtype, type(None), bool, int, float, complex, str, bytes,
          type, slice, type(Ellipsis))


class _CannotStand(Exception):
    """A value of the capture's result that cannot stand for eager's (``eager_result``)."""
