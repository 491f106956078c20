"""Gradients of NumPy functions (issue 16): ``grad``, ``value_and_grad`` and ``vjp``, JAX-shaped.

A gradient is a ``CompiledFunction`` of the user's function whose backend differentiates what
it captures (``GradientBackend``): so each call is keyed, guarded and dispatched exactly as
``compile`` does it — the arrays' dtypes, shapes and strides, every other argument by value,
and every value the capture read beside its arguments (a global scale, a dictionary entry, a
closure cell) guarded, so rebinding one compiles again instead of returning a stale gradient;
a hit costs one dispatch. The gradient mode (definition 2.2's rho: which arguments) is the
``Differentiated`` object's own, one compiled function per mode. A new key captures the
function, lowers it to the op graph, appends its reverse pass
(``stax.ir.autodiff.differentiate``: the joint program) and compiles forward and backward as
one program of fused kernels, whose flat results the backend's ``output_tree`` arranges as
``(the function's result, (one gradient per argument, of its structure))``. A function Stax
cannot differentiate raises ``UnsupportedError`` naming the op and the line (NumPy has no
gradients to fall back on). A function whose control flow reads its data (a data gate) is
refused for now, as is one that updates its arguments in place.

Floating-point events of the joint program (an ``exp`` overflowing) are NumPy's to decide:
the program runs again ignoring them, and each event is then raised, warned about or ignored
as ``np.errstate`` says, naming the gradient (JAX and torch say nothing; NumPy would warn for
the forward's).

``grad(compile(f))`` differentiates ``f``; ``compile(grad(f))`` is ``grad(f)``, already compiled.
``vjp`` compiles its program at each call (its pullback reruns it with the cotangents).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stax.codegen import FloatingPointEvents, generate, target_for
from stax.codegen.cpu.fpevents import DIVIDE, INVALID, OVERFLOW
from stax.ir import GraphProgram, UnsupportedError, lower_capture, verify_graph
from stax.ir.autodiff import COTANGENT, differentiate
from stax.ir.passes import DEFAULT_PIPELINE, decompose_to_basis, run_pipeline
from stax.ir.pytree import TreeDef, tree_flatten, tree_unflatten
from stax.loop import lower_opgraph
from stax.trace import trace
from stax.trace.source import user_frame

from . import config, logs
from .api import CompiledFunction
from .backends import make_executable
from .dumps import dumper
from .freevars import FreeVariables


class NotDifferentiable(UnsupportedError, TypeError):
    """A differentiated argument that is not a float array (an int or bool array, a number)."""


class Differentiated:
    """``fn`` differentiated with respect to its arguments ``argnums``: called, the gradient
    (``value``: the value and the gradient; ``has_aux``: ``fn`` returns ``(loss, aux)``)."""

    def __init__(self, fn: Callable[..., Any], argnums: int | Sequence[int], has_aux: bool,
                 value: bool) -> None:
        self.fn = getattr(fn, "fn", fn)  # a CompiledFunction: the function it compiles
        self.argnums = argnums
        self.has_aux, self.value = has_aux, value
        #: (argument count, differentiated positions) -> the compiled gradient
        self._compiled: dict[tuple[int, tuple[int, ...]], CompiledFunction] = {}
        self.__name__ = f"grad({getattr(self.fn, '__name__', 'fn')})"

    def __call__(self, *args: Any) -> Any:
        numbers = (self.argnums,) if isinstance(self.argnums, int) else tuple(self.argnums)
        count = len(args)
        compiled = self._compiled.get((count, numbers))
        if compiled is None:
            for k in numbers:
                if not -count <= k < count:
                    raise ValueError(f"argnums {k} is out of range for {count} arguments")
            compiled = CompiledFunction(self.fn, dynamic=False, strict_native=True)
            # the arguments as the call places them: keyword-only values (defaults) after these
            placed = compiled._form.place(args, {}) if compiled._form is not None and \
                compiled._form.always else None
            compiled.backend = GradientBackend(self.fn, len(placed[0]) if placed else count,
                                               tuple(k % count for k in numbers), self.has_aux)
            compiled.backend_name = "gradient"
            compiled.rho = f"{'value_and_grad' if self.value else 'grad'}(argnums={numbers}" \
                f"{', has_aux=True' if self.has_aux else ''})"
            self._compiled[(count, numbers)] = compiled
        result, gradients = compiled(*args)
        loss = result[0] if self.has_aux else result
        gradient = gradients[0] if isinstance(self.argnums, int) else gradients
        if self.has_aux:
            return ((loss, result[1]), gradient) if self.value else (gradient, result[1])
        return (loss, gradient) if self.value else gradient

    @property
    def versions(self) -> int:
        """Programs compiled so far, over every mode (a key each)."""
        return sum(len(c.versions()) for c in self._compiled.values())


class GradientBackend:
    """The backend of a gradient's ``CompiledFunction`` (spec §1.2's contract): the capture's
    joint program, compiled for the CPU, its results arranged by ``output_tree``."""

    def __init__(self, fn: Callable[..., Any], count: int, numbers: tuple[int, ...],
                 has_aux: bool) -> None:
        self.name = getattr(fn, "__name__", "fn")
        self.count, self.numbers, self.has_aux = count, numbers, has_aux

    def __call__(self, capture: GraphProgram, example_inputs: list[Any], *,
                 dump: Callable[[str, Any], None] | None = None,
                 log: Callable[[str, str], None] | None = None, cache_dir: Any = None,
                 device: str = "cpu") -> _GradientCall:
        if device != "cpu":
            raise UnsupportedError("gradients are compiled for the CPU (NumPy arrays) only")
        arguments = capture.input_tree.children[0]  # (lifted free arrays..., the call's own)
        first = len(arguments.children) - self.count
        starts = np.cumsum([0] + [c.num_leaves for c in arguments.children]).tolist()
        positions = [list(range(starts[first + k], starts[first + k + 1])) for k in self.numbers]
        for k, leaves in zip(self.numbers, positions):
            for i in leaves:
                meta = _input_meta(capture, capture.inputs[i])
                if meta is None or np.dtype(meta.dtype).kind != "f":
                    what = f"a {meta.dtype} array" if meta is not None else "not an array"
                    raise NotDifferentiable(f"argument {k} of {self.name} is not "
                                            f"differentiable: {what} (gradients are of float32 "
                                            "and float64 arrays)")
        wrt = [capture.inputs[i] for leaves in positions for i in leaves]
        executable, _ = joint_executable(capture, wrt, None, self.has_aux,
                                         dump or (lambda stage, doc: None), cache_dir)
        trees = tuple(arguments.children[first + k] for k in self.numbers)
        return _GradientCall(executable, TreeDef("tuple", (capture.output_tree,
                                                           TreeDef("tuple", trees))), self.name)


class _GradientCall:
    """The joint program's executable as a backend's callable: flat results in
    ``output_tree``'s order; floating-point events decided as ``np.errstate`` says."""

    def __init__(self, executable: Any, output_tree: TreeDef, name: str) -> None:
        self.executable, self.output_tree, self.name = executable, output_tree, name
        self.artifact = executable.artifact
        self._run = executable.run

    def __call__(self, *arrays: Any) -> list[Any]:
        try:
            return self._run(*arrays)
        except FloatingPointEvents as exc:
            with np.errstate(all="ignore"):
                results = self._run(*arrays)
            report_events(exc.bits, f"the gradient of {self.name}")
            return results


_EVENTS = ((DIVIDE, "divide", "divide by zero"), (OVERFLOW, "over", "overflow"),
           (INVALID, "invalid", "invalid value"))


def report_events(bits: int, where: str) -> None:
    """NumPy's handling of the events ``bits`` met in ``where``: raise ``FloatingPointError``,
    warn (``RuntimeWarning``; also for ``print``, ``log`` and ``call``) or nothing, per kind as
    ``np.geterr()`` says."""
    modes = np.geterr()
    for bit, kind, text in _EVENTS:
        if not bits & bit or modes[kind] == "ignore":
            continue
        message = f"{text} encountered in {where}"
        if modes[kind] == "raise":
            raise FloatingPointError(message)
        frame = user_frame()  # the user's line, as NumPy's warning names it
        if frame is None:
            warnings.warn(message, RuntimeWarning, stacklevel=2)
            continue
        scope = frame.f_globals
        warnings.warn_explicit(message, RuntimeWarning, frame.f_code.co_filename,
                               frame.f_lineno, module=scope.get("__name__"),
                               registry=scope.setdefault("__warningregistry__", {}),
                               module_globals=scope)


def _input_meta(capture: GraphProgram, name: str | None) -> Any:
    if name is None:
        return None
    node = next((p for p in capture.graph.placeholders if p.target == name), None)
    return getattr(node, "tensor", None) if node is not None else None


def joint_executable(capture: GraphProgram, wrt: list[str | None], mode: str | None,
                     has_aux: bool, dump: Callable[[str, Any], None], cache_dir: Any
                     ) -> tuple[Any, GraphProgram]:
    """The executable of ``capture``'s joint program differentiated by the inputs ``wrt``
    (``mode``: None, a gradient of the first result; "vjp", cotangents of every float result
    taken as inputs) and the joint program."""
    settings = config.current()
    clock = time.perf_counter()
    if capture.gates:
        gate = capture.gates[0]
        raise UnsupportedError(f"differentiating a function whose control flow reads its "
                               f"data ({gate.kind} of a traced value)", source=gate.source,
                               hint="use np.where, np.maximum or stax.runtime.gate")
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
    if not (has_aux or mode == "vjp" or len(opgraph.outputs) == 1):
        raise UnsupportedError("a gradient is defined for a function with one result (a "
                               "float scalar)", hint="with an auxiliary result: has_aux=True")
    verify_graph(joint.graph)
    dump("opgraph", joint)
    loop = lower_opgraph(joint, materialize=target.materialize, options=target.loop_options)
    dump("loopir", loop)
    artifact = generate(loop, target=target)
    dump("kernels", artifact)
    executable = make_executable(artifact, cache_dir)
    executable.artifact = artifact
    logs.emit("autodiff", settings.logs, f"{capture.name}: {joint.info.get('autodiff')}")
    logs.emit("perf", settings.logs, f"compiled {capture.name} with its reverse pass in "
              f"{(time.perf_counter() - clock) * 1e3:.1f} ms")
    return executable, joint


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
    primals = (*lifted, *primals)
    capture = trace(free.lifted() if free else fn, tuple(primals), {},
                    name=getattr(fn, "__name__", "fn"))
    positions, start = [], 0
    for k, arg in enumerate(primals):
        leaves = tree_flatten(arg)[0]
        if k >= len(lifted):
            for leaf in leaves:
                if not (isinstance(leaf, np.ndarray) and leaf.dtype.kind == "f"):
                    raise NotDifferentiable(f"argument {k - len(lifted)} of "
                                            f"{getattr(fn, '__name__', 'fn')} is not "
                                            f"differentiable: {_kind(leaf)}")
            positions.append(list(range(start, start + len(leaves))))
        start += len(leaves)
    settings = config.current()
    dump = dumper(settings.dump_dir, f"{capture.name}.vjp", 0)
    dump("capture", capture)
    executable, joint = joint_executable(capture, [capture.inputs[i] for p in positions
                                                   for i in p], "vjp", False, dump,
                                         settings.cache_dir)
    inputs = list(joint.inputs)  # the capture's, then the outputs' cotangents
    n_outputs = len(joint.outputs) - sum(len(p) for p in positions)
    seeds = [(tuple(o.tensor.shape), o.tensor.dtype) for o in joint.outputs[:n_outputs]
             if getattr(o, "tensor", None) is not None and np.dtype(o.tensor.dtype).kind == "f"]

    def run(cotangents: Sequence[np.ndarray]) -> list[Any]:
        leaves, _ = tree_flatten((tuple(primals), {}))
        given = {name: leaf for name, leaf in zip(capture.inputs, leaves) if name}
        given.update({COTANGENT.format(k): s for k, s in enumerate(cotangents)})
        return list(executable(*[given[name] for name in inputs if name]))

    flat = run([np.zeros(shape, dtype) for shape, dtype in seeds])
    forward = [o[()] if isinstance(o, np.ndarray) and not o.ndim else o
               for o in flat[:n_outputs]]
    out = tree_unflatten(capture.output_tree, forward)

    def pullback(cotangent: Any) -> tuple[Any, ...]:
        leaves, tree = tree_flatten(cotangent)
        if tree != capture.output_tree:
            raise ValueError("the cotangent must have the structure of the function's result")
        given = [np.asarray(c, dtype=o.dtype) for c, o in zip(leaves, forward)
                 if np.dtype(np.asarray(o).dtype).kind == "f"]
        rest, at, grads = run(given)[n_outputs:], 0, []
        for k, leaves_of in enumerate(positions):
            grads.append(tree_unflatten(tree_flatten(primals[len(lifted) + k])[1],
                                        rest[at:at + len(leaves_of)]))
            at += len(leaves_of)
        return tuple(grads)
    return out, pullback


def _kind(leaf: Any) -> str:
    if isinstance(leaf, np.ndarray):
        return f"a {leaf.dtype} array"
    return f"a {type(leaf).__name__}"
