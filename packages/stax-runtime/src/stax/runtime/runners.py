"""How a version's compiled code is called: the runners that turn (args, kwargs) into the kernel's
flat inputs and its flat outputs back into the function's result (with in-place writebacks), the
guarded machine-code entry, and the argument walks the call layer needs around them."""

from __future__ import annotations

import inspect
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from stax.ir import StaxError, TreeDef, tree_leaves, tree_unflatten
from stax.ir.meta import elements_overlap
from stax.trace.proxy import Proxy

from . import devices
from .guards import Snapshot


def untraced_state(tree: Any, limit: int = 64) -> tuple[list[np.ndarray], list[dict[str, Any]]]:
    """Arrays inside argument objects (``cfg.w``) and the attribute dictionaries of argument
    objects: capture computes on the arrays directly and runs the function's attribute
    assignments (``self.calls += 1``) for real, so what a capture that does not finish changed
    there must be undone before the eager run does it again. Only small arrays reach here
    (larger ones make the key unguardable and the call eager)."""
    found: list[np.ndarray] = []
    attributes: list[dict[str, Any]] = []
    seen: set[int] = set()

    def walk(value: Any, depth: int) -> None:
        if len(found) >= limit or len(attributes) >= limit or depth > 4 or id(value) in seen:
            return
        seen.add(id(value))
        if type(value) is np.ndarray:
            if depth > 0:  # arguments themselves are traced (read-only views)
                found.append(value)
            return
        if isinstance(value, (tuple, list)):
            for v in value:
                walk(v, depth + (type(value) not in (tuple, list)))
        elif isinstance(value, dict):
            for v in value.values():
                walk(v, depth + (type(value) is not dict))
        elif not isinstance(value, (type, types.ModuleType, types.FunctionType, np.generic,
                                    int, float, complex, str, bytes)) and value is not None:
            attrs = getattr(value, "__dict__", None)
            if isinstance(attrs, dict):
                attributes.append(attrs)
                for v in attrs.values():
                    walk(v, depth + 1)
    walk(tree, 0)
    return found, attributes


def bound_in_its_module(obj: Any) -> bool:
    """Whether ``obj`` is what its module binds to its ``__qualname__`` (pickled by name)."""
    found: Any = sys.modules.get(getattr(obj, "__module__", None) or "")
    for part in getattr(obj, "__qualname__", "").split("."):
        found = getattr(found, part, None)
    return found is obj


def generator_states(slots: list[int], args: tuple[Any, ...], kwargs: dict[str, Any]
                      ) -> list[tuple[np.random.Generator, Any]]:
    leaves = tree_leaves((args, kwargs))
    return [(leaves[i], leaves[i].bit_generator.state) for i in slots]


def accepted_services(backend: Callable[..., Any], services: dict[str, Any]) -> dict[str, Any]:
    """The optional services (``dump``, ``timings``, ``log``) a backend's signature takes: the spec
    §1.2 contract is ``backend(graph, example_inputs, **options)``, so a plain
    ``backend(graph, example_inputs)`` gets none of them."""
    try:
        params = inspect.signature(backend).parameters
    except (TypeError, ValueError):
        return {}
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return services
    return {k: v for k, v in services.items() if k in params}


def named_parameters(fn: Callable[..., Any]) -> set[str]:
    """The parameter names ``fn``'s signature spells out (none for a builtin without one)."""
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


def updated_copies(outcome: Any) -> list[np.ndarray]:
    """The arguments a finished capture updated in place (host copies, for a device call): the
    ones ``Outcome.eager_result`` wrote their final values into."""
    return [caller for argument, caller in outcome.arguments
            if argument.proxy.node is not argument.node]


def keep_updates_of_a_failed_call(outcome: Any, placement: Any, error: Exception,
                                  eager: Callable[[], Any]) -> None:
    """The function raised its own error during capture, which ran it as eager NumPy would:
    arguments it updated in place before the error keep those updates, as NumPy leaves them
    (written into the caller's arrays; for a device call, the host copies' values are then
    copied into the caller's device arrays), and generator arguments are advanced by its draws.

    A ``FloatingPointError`` (NumPy's error state set to raise) may come from an in-place
    operation itself, which NumPy raises after writing its result into the operand (``x *= 1e30``
    leaves ``inf`` in ``x``), where capture computed the update as a new array and never bound it:
    ``eager()`` runs the function again on the caller's arrays, which then hold what NumPy
    leaves, and raises NumPy's error. The capture gave NumPy's warnings and error calls before
    the error already: the run again ignores every category but those that raise (Python side
    effects before the error still happen twice, as in any capture refused midway)."""
    if isinstance(error, FloatingPointError) and placement is None:
        outcome.undo_untraced_updates()
        state = {k: "raise" if v == "raise" else "ignore" for k, v in np.geterr().items()}
        with warnings.catch_warnings(), np.errstate(**state):
            warnings.simplefilter("ignore")
            eager()
        return
    for argument, caller in outcome.arguments:
        if argument.proxy.node is not argument.node and caller.flags.writeable:
            np.copyto(caller, argument.proxy.value)
            if placement is not None:
                placement.write_back(caller)
    for caller, private in outcome.generators:  # its draws before the error (capture drew
        caller.bit_generator.state = private.bit_generator.state  # from a copy: a review's find)


def traced_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether any argument leaf is a traced value (a call from inside another capture)."""
    values = (*args, *kwargs.values()) if kwargs else args
    if any(type(v) in (tuple, list, dict) for v in values):
        return any(isinstance(leaf, Proxy) for leaf in tree_leaves((args, kwargs)))
    return any(isinstance(v, Proxy) for v in values)


def guarded_entry(function: Callable[..., Any], free: Snapshot, dispatch: Callable[..., Any]
                   ) -> Callable[..., Any]:
    """The machine-code entry of a version with free-value guards: they are checked first."""
    def call(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs) if free.matches() else dispatch(*args, **kwargs)
    return call


def flat_runner(run_flat: Callable[..., list[Any]], slots: list[int], output_tree: TreeDef
                ) -> Callable[..., Any]:
    """``run(*args)`` for a version whose arguments are all top-level positional leaves (its key
    says so, hence every call it runs): the inputs taken at ``slots`` without walking a tree
    (``tree_leaves`` of ``(A, 8)`` cost 0.8 us of a call's 3 us of dispatch on an Intel Xeon)."""
    if output_tree.kind == "leaf":
        def run_one(*args: Any) -> Any:
            return run_flat(*[args[i] for i in slots])[0]
        return run_one

    def run(*args: Any) -> Any:
        return tree_unflatten(output_tree, run_flat(*[args[i] for i in slots]))
    return run


def tree_runner(run_flat: Callable[..., list[Any]], slots: list[int], output_tree: TreeDef
                 ) -> Callable[[tuple[Any, ...], dict[str, Any]], Any]:
    single = output_tree.kind == "leaf"

    def run(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        leaves = tree_leaves((args, kwargs))
        outputs = run_flat(*[leaves[i] for i in slots])
        return outputs[0] if single else tree_unflatten(output_tree, outputs)
    return run


class RunEagerly(StaxError):
    """A compiled version declines one call (it would not match eager NumPy's behaviour for these
    particular arguments); the call runs eagerly, with one warning per version."""


def writeback_runner(run_flat: Callable[..., list[Any]], slots: list[int], capture: Any,
                     library: Any = None) -> Callable[[tuple[Any, ...], dict[str, Any]], Any]:
    """A version that updates arguments in place: run, then copy the final values back (for
    device arrays, into the caller's arrays through their ``library``). When an updated argument
    overlaps another argument in memory (f(x, x), or views of one array), the result would
    depend on that aliasing, which the key does not hold: such calls run eagerly."""
    plan = capture.writeback_plan()
    names = [capture.inputs[i] for i in slots]
    updated = set(capture.writeback)
    if library is None:
        def overlaps(a: Any, other: Any) -> bool:
            return isinstance(other, np.ndarray) and np.may_share_memory(a, other)

        def finish(flat: list[Any], env: dict[str, Any]) -> list[Any]:
            return plan.apply(flat, env)
    else:
        def overlaps(a: Any, other: Any) -> bool:
            return devices.library_of(other) is not None and \
                devices.may_share_memory(a, other, library)

        def finish(flat: list[Any], env: dict[str, Any]) -> list[Any]:
            for name, index in plan.copies:
                devices.write(env[name], flat[index], library)
            return plan.user_outputs(flat, env)

    def run(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        leaves = tree_leaves((args, kwargs))
        arrays = [leaves[i] for i in slots]
        env = dict(zip(names, arrays))
        for n in updated:
            if not getattr(getattr(env[n], "flags", None), "writeable", True):
                # the key holds no flags: a version compiled for a writable array must not
                # write into a read-only one (an immutable bytes object, a PROT_READ mapping)
                raise RunEagerly(f"it updates argument {n!r} in place and that argument is "
                                 "read-only (NumPy raises)")
            if any(overlaps(env[n], other) for m, other in env.items() if m != n):
                raise RunEagerly(f"it updates argument {n!r} in place and that argument "
                                 "overlaps another one in memory")
            if self_overlapping(env[n]):
                raise RunEagerly(f"it updates argument {n!r} in place and elements of that "
                                 "argument share memory (a broadcast or as_strided array): "
                                 "which write lands last is NumPy's order")
        return tree_unflatten(capture.output_tree, finish(run_flat(*arrays), env))
    return run


def without_writeback(capture: Any) -> Any:
    """``capture`` computing the final values of the arguments it updates, without copying them
    back (``CompiledFunction.donates_arguments``)."""
    output = capture.graph.output_node  # a capture of this compile's own: changed in place
    output.set_args((tuple(output.args[0][:capture.output_tree.num_leaves]),))
    capture.writeback = []
    return capture


def self_overlapping(array: Any) -> bool:
    """Whether elements of ``array`` share memory (a zero stride on an axis longer than 1, or
    axes whose strides interleave, as ``as_strided`` makes): writing a whole final value into it
    leaves whichever element comes last, where NumPy's own step left its own order's last write
    (``x[1] = 5`` on a broadcast row wrote 5 into the shared cell; a copy-back wrote the old
    value of the last element over it: found by a probe)."""
    return elements_overlap(getattr(array, "shape", ()), getattr(array, "strides", ()),
                            getattr(getattr(array, "dtype", None), "itemsize", 1))
