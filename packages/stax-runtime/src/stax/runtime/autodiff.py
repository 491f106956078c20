"""Gradients of NumPy functions (issue 16): ``grad``, ``value_and_grad`` and ``vjp``, JAX-shaped.

Each call is keyed as ``compile`` keys one (the arrays' dtypes, shapes and strides; every other
argument by value) with the gradient mode beside it (definition 2.2's rho: which arguments, a
gradient or a vector-Jacobian product). A new key captures the function, lowers it to the op
graph, appends its reverse pass (``stax.ir.autodiff.differentiate``: the joint program) and
compiles forward and backward as one program of fused kernels; a hit runs that program. A
function Stax cannot differentiate raises ``UnsupportedError`` naming the op and the line (NumPy
has no gradients to fall back on). A function whose control flow reads its data (a data gate)
is refused for now, as is one that updates its arguments in place.

``grad(compile(f))`` differentiates ``f``; ``compile(grad(f))`` is ``grad(f)``, already compiled.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stax.codegen import generate, target_for
from stax.ir import GraphProgram, UnsupportedError, lower_capture, verify_graph
from stax.ir.autodiff import COTANGENT, differentiate
from stax.ir.passes import DEFAULT_PIPELINE, decompose_to_basis, run_pipeline
from stax.ir.pytree import tree_flatten, tree_unflatten
from stax.loop import lower_opgraph
from stax.trace import trace

from . import config, logs
from .backends import make_executable
from .freevars import FreeVariables


class Differentiated:
    """``fn`` differentiated with respect to its arguments ``argnums``: called, the gradient
    (``value``: the value and the gradient; ``has_aux``: ``fn`` returns ``(loss, aux)``)."""

    def __init__(self, fn: Callable[..., Any], argnums: int | Sequence[int], has_aux: bool,
                 value: bool) -> None:
        self.fn = getattr(fn, "fn", fn)  # a CompiledFunction: the function it compiles
        self.argnums = argnums
        self.has_aux, self.value = has_aux, value
        self._programs: dict[Any, _Program] = {}
        self.__name__ = f"grad({getattr(self.fn, '__name__', 'fn')})"

    def __call__(self, *args: Any) -> Any:
        numbers = (self.argnums,) if isinstance(self.argnums, int) else tuple(self.argnums)
        for k in numbers:
            if not -len(args) <= k < len(args):
                raise ValueError(f"argnums {k} is out of range for {len(args)} arguments")
        # arrays the function reads as globals or closure cells: leading arguments, as
        # ``compile`` takes them (constants of the gradient: not differentiated)
        free = FreeVariables(self.fn)
        lifted = tuple(free.read()) if free else ()
        numbers = tuple(len(lifted) + k % len(args) for k in numbers)
        args = (*lifted, *args)
        program = self._program(free.lifted() if free else self.fn, args, numbers, None)
        outputs, grads = program.run(args)
        result = tree_unflatten(program.output_tree, outputs)
        loss = result[0] if self.has_aux else result
        trees = [_rebuild(program.wrt_trees[k], grads[k]) for k in range(len(numbers))]
        gradient = trees[0] if isinstance(self.argnums, int) else tuple(trees)
        if self.has_aux:
            return ((loss, result[1]), gradient) if self.value else (gradient, result[1])
        return (loss, gradient) if self.value else gradient

    def _program(self, fn: Callable[..., Any], args: tuple[Any, ...], numbers: tuple[int, ...],
                 mode: Any) -> _Program:
        key = (_key(args), numbers, self.has_aux, mode)
        found = self._programs.get(key)
        if found is None:
            found = self._programs[key] = _Program.build(fn, args, numbers, self.has_aux, mode)
        return found


def grad(fn: Callable[..., Any], argnums: int | Sequence[int] = 0,
         has_aux: bool = False) -> Differentiated:
    """The gradient of ``fn`` (whose result is a float scalar, or ``(scalar, aux)`` with
    ``has_aux``) with respect to argument ``argnums`` (a tuple: one gradient each), each of the
    argument's structure (an array, or tuples, lists and dicts of arrays)."""
    return Differentiated(fn, argnums, has_aux, value=False)


def value_and_grad(fn: Callable[..., Any], argnums: int | Sequence[int] = 0,
                   has_aux: bool = False) -> Differentiated:
    """``(fn(*args), grad(fn)(*args))`` from one compiled program."""
    return Differentiated(fn, argnums, has_aux, value=True)


def vjp(fn: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """``(fn(*primals), pullback)``: ``pullback(cotangent)`` (a cotangent of ``fn``'s result's
    structure, each leaf of its leaf's shape and dtype) gives one cotangent per primal."""
    fn = getattr(fn, "fn", fn)
    free = FreeVariables(fn)
    lifted = tuple(free.read()) if free else ()
    numbers = tuple(range(len(lifted), len(lifted) + len(primals)))
    primals = (*lifted, *primals)
    program = _Program.build(free.lifted() if free else fn, primals, numbers, False, "vjp")
    forward = program.forward(primals)
    out = tree_unflatten(program.output_tree, forward)

    def pullback(cotangent: Any) -> tuple[Any, ...]:
        leaves, tree = tree_flatten(cotangent)
        if tree != program.output_tree:
            raise ValueError("the cotangent must have the structure of the function's result")
        seeds = [np.asarray(c, dtype=o.dtype) for c, o in zip(leaves, forward)
                 if np.dtype(np.asarray(o).dtype).kind == "f"]
        _, grads = program.run(primals, seeds)
        return tuple(_rebuild(program.wrt_trees[k], grads[k]) for k in range(len(numbers)))
    return out, pullback


class _Program:
    """One key's compiled joint program and how its flat outputs map to the result."""

    def __init__(self, executable: Any, capture: GraphProgram, joint: GraphProgram,
                 n_outputs: int, wrt_leaves: list[list[int]], wrt_trees: list[Any]) -> None:
        self.executable, self.capture = executable, capture
        self.inputs = list(joint.inputs)  # the capture's, then the outputs' cotangents (vjp)
        self.output_tree = capture.output_tree
        self.n_outputs = n_outputs
        self.wrt_leaves, self.wrt_trees = wrt_leaves, wrt_trees
        #: the float outputs' shapes and dtypes: a vjp's cotangents
        self.seeds = [(tuple(o.tensor.shape), o.tensor.dtype) for o in joint.outputs[:n_outputs]
                      if getattr(o, "tensor", None) is not None and
                      np.dtype(o.tensor.dtype).kind == "f"]

    @staticmethod
    def build(fn: Callable[..., Any], args: tuple[Any, ...], numbers: tuple[int, ...],
              has_aux: bool, mode: Any) -> _Program:
        settings = config.current()
        clock = time.perf_counter()
        positions, trees = [], []
        start = 0
        for k, arg in enumerate(args):
            arg_leaves, arg_tree = tree_flatten(arg)
            if k in numbers:
                for leaf in arg_leaves:
                    if not (isinstance(leaf, np.ndarray) and leaf.dtype.kind == "f"):
                        raise TypeError(f"argument {k} of {getattr(fn, '__name__', 'fn')} is "
                                        f"not differentiable: {_kind(leaf)} (gradients are of "
                                        "float32 and float64 arrays)")
                positions.append(list(range(start, start + len(arg_leaves))))
                trees.append(arg_tree)
            start += len(arg_leaves)
        capture = trace(fn, tuple(args), {}, name=getattr(fn, "__name__", "fn"))
        if capture.gates:
            gate = capture.gates[0]
            raise UnsupportedError(f"differentiating a function whose control flow reads its "
                                   f"data ({gate.kind} of a traced value)", source=gate.source,
                                   hint="use np.where, np.maximum or stax.runtime.gate")
        wrt = [capture.inputs[i] for leaves_of in positions for i in leaves_of]
        if any(name is None for name in wrt):
            raise UnsupportedError("a differentiated argument is not an array input")
        target = target_for("cpu")
        copy = GraphProgram.from_json(capture.to_json(), capture.schema)
        run_pipeline(copy.graph, DEFAULT_PIPELINE)
        opgraph = lower_capture(copy)
        decompose_to_basis(opgraph.graph, basis=target.basis)
        # (differentiate first: a function updating an argument in place has it as a second
        # result, and is refused for the update, not for the results)
        joint = differentiate(opgraph, wrt, output=None if mode == "vjp" else 0)
        if has_aux or mode == "vjp" or len(opgraph.outputs) == 1:
            n_outputs = len(opgraph.outputs)
        else:
            raise UnsupportedError("a gradient is defined for a function with one result (a "
                                   "float scalar)", hint="with an auxiliary result: has_aux=True")
        verify_graph(joint.graph)
        loop = lower_opgraph(joint, materialize=target.materialize, options=target.loop_options)
        executable = make_executable(generate(loop, target=target), settings.cache_dir)
        logs.emit("autodiff", settings.logs, f"{capture.name}: {joint.info.get('autodiff')}")
        logs.emit("perf", settings.logs, f"compiled {capture.name} with its reverse pass in "
                  f"{(time.perf_counter() - clock) * 1e3:.1f} ms")
        return _Program(executable, capture, joint, n_outputs, positions, trees)

    def run(self, args: tuple[Any, ...], seeds: Sequence[np.ndarray] = ()
            ) -> tuple[list[Any], list[list[Any]]]:
        """The outputs and, per differentiated argument, its leaves' cotangents."""
        leaves, _ = tree_flatten((tuple(args), {}))
        given = {name: leaf for name, leaf in zip(self.capture.inputs, leaves) if name}
        given.update({COTANGENT.format(k): s for k, s in enumerate(seeds)})
        flat = list(self.executable(*[given[name] for name in self.inputs if name]))
        outputs, rest = flat[:self.n_outputs], flat[self.n_outputs:]
        grads, at = [], 0
        for leaves_of in self.wrt_leaves:
            grads.append(rest[at:at + len(leaves_of)])
            at += len(leaves_of)
        return [o[()] if isinstance(o, np.ndarray) and not o.ndim else o for o in outputs], grads

    def forward(self, args: tuple[Any, ...]) -> list[Any]:
        """The outputs alone (a vjp's primal result): the program with zero cotangents."""
        outputs, _ = self.run(args, [np.zeros(shape, dtype) for shape, dtype in self.seeds])
        return outputs


def _rebuild(tree: Any, leaves: list[Any]) -> Any:
    return tree_unflatten(tree, leaves)


def _key(args: tuple[Any, ...]) -> Any:
    leaves, tree = tree_flatten((tuple(args), {}))
    return tree, tuple((leaf.dtype.str, leaf.shape, leaf.strides) if isinstance(leaf, np.ndarray)
                       else (type(leaf).__name__, repr(leaf)) for leaf in leaves)


def _kind(leaf: Any) -> str:
    if isinstance(leaf, np.ndarray):
        return f"a {leaf.dtype} array"
    return f"a {type(leaf).__name__}"
