"""Capture by proxy tracing in mixed mode (spec §3.2–3.3): function + example inputs -> capture graph."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from stax.ir import (
    CAPTURE_SCHEMA,
    GATE_CONVERSIONS,
    Gate,
    Graph,
    GraphProgram,
    Opcode,
    TensorMeta,
    UnsupportedError,
    backward_slice,
    data_dependent_shape,
    tree_flatten,
    tree_leaves,
    tree_unflatten,
)
from stax.ir.pytree import is_namedtuple
from stax.ir.sizes import Size

from . import creation, loops, masked, masked_reductions, minmax, numpy_answers, result_conversions
from .call_values import ITEM_SLICED, concrete_arguments, gate_shape_arguments, gate_slice_bounds
from .capture_info import capture_info
from .creation import Created, constant_result, not_recording, recording_creation
from .error_state import error_state_at_entry, note_error_state
from .examples import example_view, root_array
from .gate_budget import add_gate
from .generator_proxy import GeneratorProxy
from .isolation import private_generator, refused, refusing_draws
from .leaves import leaf_names
from .live_views import LiveViews
from .loop_index import taking_loop_index_argument
from .outcome import Argument, Outcome
from .proxy import Proxy, escaped
from .raised import caught_error, decided_by_key
from .reach import plain_exception, scan, settle_stored, stand_in_error
from .result_meta import meta_of, view_relation
from .selection_counts import resolve as resolve_counts
from .source import holding_warnings, traced_value, user_source
from .traced_scalars import FOLLOWING, TracedScalar, retried, retried_with_values, value_kind
from .traced_sizes import SizeReads, TracedSize, size_arguments

_CONSTANT_TYPES = (type(None), bool, int, float, complex, str, np.generic, np.dtype, slice,
                   type(Ellipsis))


#: a complex array's parts: returned, a view of the argument they are parts of (NumPy's call)
_PARTS = ("numpy.real", "numpy.imag")

#: capture stops here (about a second of capture; a plan that large would not be compiled anyway:
#: ``stax.codegen.program_plan.MAX_STEPS``)
MAX_NODES = 20_000


class Tracer:
    """Records calls on proxies into a capture graph."""

    def __init__(self) -> None:
        self.graph = Graph("capture")
        self.gates: list[Gate] = []
        self.created: dict[int, Created] = {}  # arrays made by np.zeros & co. during capture
        # every traced array value still alive (what an in-place update can reach), and views
        self.arrays: list[weakref.ref[np.ndarray]] = []  # ``x[key]``, made again after writes
        self.views = LiveViews()
        self.arguments: dict[int, Argument] = {}  # proxies standing for array arguments
        self.finished = False  # capture is over: its proxies must not be used any more
        # nodes computed from local arrays and constants alone (``np.arange(n) * 2``): their
        # values follow from the key, so Python may read them without a data gate
        self.constants: set[Any] = set()
        # masked assignment (masked.py): reads x[m] by node -> ((x, value), m), 0-d values
        self.masked_reads: dict[Any, tuple[tuple[Any, Any], Any]] = {}
        self.scalar_values: dict[Any, Any] = {}
        self.shape_read: set[Any] = set()  # the nodes whose shape Python read
        self.sizes = SizeReads(self)  # sizes the user's code read (``x.shape[0]``), as symbols
        self.scalar_read: set[int] = set()  # flat indices of scalar arguments Python read
        self.scalar_used: set[int] = set()  # ... and of those traced calls took (``size_arguments``)
        self.scalar_predicates: list[list[Any]] = []  # comparisons of them Python branched on
        self.superseded: list[Any] = []
        self.selections: dict[Any, Any] = {}  # builtin max/min results, maybe Python floats
        #: calls on traced values that raised (``caught``): (what, exception type, source)
        self.raised: list[tuple[str, str, str | None]] = []
        self.item_slices = False  # a lifted loop's body: its item may bound a slice (loops.py)
        #: NumPy's error state where the function began (its capsule), and whether an operation
        #: was recorded under another one: the function's own ``np.errstate`` block, wherever
        #: written (``error_state.py``), and whether that block heeded underflow
        self.error_state, self.own_error_state, self.heeds_underflow = None, False, False

    def shared(self, proxy: Proxy, ignore: tuple[Any, ...] = ()) -> str | None:
        """Why an in-place update of ``proxy`` could be seen through another name, or None.

        An argument may be updated (its final value is written back to the caller's array at the
        end), unless it is read-only or a view of it is alive."""
        value = proxy.value
        argument = self.arguments.get(id(proxy))
        if argument is not None:
            if not argument.writeable:
                return "a read-only argument"
            if self._viewed(argument.example, (value, *ignore)) or (
                    value is not argument.example and self._viewed(value, (value, *ignore))):
                return "an argument another value views"
            return None
        viewed = self._viewed(value, (value, *ignore))
        # a view whose memory nothing else traced can see (``x[:, idx]``'s result: NumPy's
        # advanced indexing returns a transposed view of a fresh array) is the value's own
        if (viewed and value.base is not None) or self._aliases_an_argument(value):
            return "a view of another array"
        if viewed:
            return "an array another value views"
        return None

    def _aliases_an_argument(self, value: Any) -> bool:
        """Whether a result NumPy made a view of some array, with no view relation to its first
        operand (``np.split(x, 2)[0]``, ``x.view(np.int64)``), shares an argument's memory (meta
        ``aliases``): an identity step on it (``* 1``) must not be dropped where it is returned."""
        return isinstance(value, np.ndarray) and value.base is not None and any(
            np.may_share_memory(a.example, value) or (  # as it came in, or as updated in place
                isinstance(a.proxy.value, np.ndarray) and np.may_share_memory(a.proxy.value, value))
            for a in self.arguments.values())

    def _reaches_argument(self, args: Any, kwargs: dict[str, Any]) -> bool:
        """Whether an operand shares memory with an array argument (capture computes on
        read-only views of the caller's arrays)."""
        operands = [v for v in tree_leaves((concrete_arguments(args), concrete_arguments(kwargs)))
                    if isinstance(v, np.ndarray)]
        return any(np.may_share_memory(a.example, v) or
                   (0 in (a.example.size, v.size) and root_array(a.example) is root_array(v))
                   for a in self.arguments.values() for v in operands)

    def _viewed(self, array: np.ndarray, skip: tuple[Any, ...]) -> bool:
        """Whether a live traced value, other than those in ``skip``, shares memory with ``array``.
        Values no longer alive are dropped from the list as it is walked (kept, they made every
        update of a long loop's capture walk all the values before it: quadratic)."""
        alive, found = [], False
        for ref in self.arrays:
            other = ref()
            if other is None:
                continue
            alive.append(ref)
            if not found and all(other is not s for s in skip) and \
                    np.may_share_memory(other, array):
                found = True
        self.arrays = alive
        return found

    def gate(self, proxy: Proxy, kind: str) -> Any:
        """Python reads a traced value (spec table 3.2): answer from the example, record a gate."""
        if self.finished:
            raise escaped()
        # of an array of several elements, the error is its size's, which the key holds
        with self.raising(f"{kind}() of a traced value", user_source(),
                          lambda exc: np.size(proxy.value) != 1):
            value = GATE_CONVERSIONS[kind](proxy.value)  # NumPy's own errors surface unchanged
        if proxy.node not in self.constants:
            add_gate(self.gates, Gate(proxy.node.name, kind, value, user_source()))
        return value

    def record(self, op: Opcode, target: str, args: Any, kwargs: dict[str, Any],
               fn: Callable[..., Any], random: bool = False) -> Any:
        if self.finished:
            raise escaped()
        if self.heeds_underflow is not True:
            note_error_state(self)
        if self.selections:  # weak or pinned max/min results among the operands (minmax.py)
            args, kwargs, done = minmax.settle(self, op, target, args, kwargs, fn)
            if done is not minmax.PROCEED:
                return done
        source = user_source(3)
        if len(self.graph.nodes) >= MAX_NODES:
            raise refused(UnsupportedError(
                f"capture recorded {MAX_NODES} operations (a Python loop unrolls at capture: "
                "each iteration's operations are recorded again)", source=source,
                hint="the function runs eagerly; write the loop with whole-array operations"))
        args = gate_slice_bounds(args, self.item_slices and target in ITEM_SLICED)
        args, kwargs = gate_shape_arguments(target, args, kwargs)
        sizes: list[tuple[tuple[Any, ...], Any]] = []  # shape-read sizes among the arguments
        node_args = self._symbolic(args, source, sizes, ("args",))
        node_kwargs = self._symbolic(kwargs, source, sizes, ("kwargs",))
        with not_recording(), traced_value(), \
                self.raising(f"{target}()", source, lambda exc: decided_by_key(target, exc, args)):
            try:
                # user errors surface unchanged
                value = fn(*concrete_arguments(args), **concrete_arguments(kwargs))
            except ValueError as exc:
                if "read-only" not in str(exc) or not self._reaches_argument(args, kwargs):
                    raise
                raise refused(UnsupportedError(
                    f"{target}() writes into an array argument in place", source=source,
                    hint="return a new array instead")) from None
        first = args[0] if isinstance(args, (tuple, list)) and args else None
        if isinstance(first, Proxy) and first.tracer is self and \
                isinstance(value, np.ndarray) and value is first.value:
            # NumPy gave its argument array back (``x.real`` of a real x, ``np.asarray``); not a
            # NumPy scalar: ``np.True_ | np.True_`` is the one ``np.True_`` object, a new value
            return first
        if _is_array(value):
            meta = {"tensor": meta_of(value, target, source), "source": source,
                    **size_arguments(sizes, self.scalar_used)}
            if random:
                meta["random"] = True
            view = view_relation(value, args) if isinstance(value, np.ndarray) else None
            if view is not None:
                meta["view"] = view
            elif self._aliases_an_argument(value):
                meta["aliases"] = True
            node = self.graph.create_node(op, target, node_args, node_kwargs, meta=meta)
            self.adopt(node, value)
            if not np.ndim(value):
                self.scalar_values[node] = value
            self._gate_shape(node, "shape", value, source)
            return Proxy(node, value, self)
        several = isinstance(value, (tuple, list)) and value and all(_is_array(v) for v in value)
        scalars = [(path, e) for path, e in sizes if isinstance(e, TracedScalar) and several]
        for _, expression in sizes:  # not one array: the sizes' uses are not followed (nor a
            if not isinstance(expression, TracedScalar):  # scalar's, but into several results:
                self.sizes.read(expression)  # a lifted loop's step: its node says where)
            elif not several:
                expression.read()
        if several:
            # several results (np.divmod, np.split, np.linalg.eigh): one node for the call, one
            # operator.getitem node per result, as torch.fx does
            metas = [meta_of(v, target, source) for v in value]  # unsupported dtypes first
            meta = {"sequence": len(value), "source": source, **size_arguments(scalars, self.scalar_used)}
            node = self.graph.create_node(op, target, node_args, node_kwargs, meta=meta)
            self._gate_shape(node, "shapes", value, source)
            items = [Proxy(self.graph.create_node(
                Opcode.CALL_FUNCTION, "operator.getitem", (node, i), {}, name=f"{node.name}_{i}",
                meta={"tensor": m, "source": source,
                      **({"aliases": True} if self._aliases_an_argument(v) else {})}), v, self)
                for i, (v, m) in enumerate(zip(value, metas))]
            return type(value)(items) if type(value) in (tuple, list) else tuple(items)
        implementation = numpy_answers.ANSWERS.get(target, getattr(fn, "_implementation", None))
        if type(value) in (bool, int, float) and callable(implementation):
            # a NumPy function in Python answering with a number (``np.allclose``, ``np.ndim``):
            # its code runs on the traced values (their data read: a gate; dtype, shape: constants)
            return implementation(*args, **kwargs)
        if target in creation.DTYPE_RESULTS and isinstance(value, (np.dtype, type)):
            return value  # of the operands' dtypes alone (NEP 50), which the key holds
        raise refused(UnsupportedError(
            f"{target}() returned a {type(value).__name__}, not an array", source=source))

    @contextmanager
    def raising(self, what: str, source: str | None,
                by_key: Callable[[Exception], bool]) -> Iterator[None]:
        """Note an exception raised in the block (it propagates unchanged): a function that
        catches it took a path the data chose (``np.linalg.inv`` of a singular matrix, an
        error under ``np.errstate(...="raise")``), which a compiled version cannot check
        (``caught``); not one the key decides (``by_key``: shapes, dtypes, constant indices),
        which every call of the version raises alike."""
        try:
            yield
        except Exception as exc:
            if not by_key(exc):
                self.raised.append((what, type(exc).__name__, source))
            raise

    def caught(self) -> UnsupportedError | None:
        """Why a capture whose function returned cannot be compiled: a traced call raised and
        the function caught the exception."""
        return caught_error(self.raised)

    def adopt(self, node: Any, value: Any) -> None:
        """A node made outside ``record`` (masked.py) and its concrete value."""
        self._note_constant(node)
        if isinstance(value, np.ndarray):
            self.arrays.append(weakref.ref(value))

    def lift_masked(self, value: Proxy, mask: Proxy) -> Proxy | None:
        lifted = masked.lift(self, value, mask)
        return None if lifted is None else Proxy(lifted[0], lifted[1], self)

    def _note_constant(self, node: Any) -> None:
        if not node.meta.get("random") and all(n in self.constants for n in node.inputs):
            self.constants.add(node)

    def _gate_shape(self, node: Any, kind: str, value: Any, source: str | None) -> None:
        """A result whose shape depends on the data is specialized on that shape: a data gate."""
        if data_dependent_shape(node):
            node.meta["shape_gated"] = True
            if node in self.constants:
                return  # the shape follows from the key
            add_gate(self.gates, Gate(node.name, kind, GATE_CONVERSIONS[kind](value), source))

    def _symbolic(self, value: Any, source: str | None,
                  sizes: list[tuple[tuple[Any, ...], Any]] | None = None,
                  path: tuple[Any, ...] = ()) -> Any:
        """A call's argument as the node records it; a size read from a shape is its int, and
        with ``sizes`` given, its place and expression are appended there (else it is read)."""
        if isinstance(value, TracedSize):
            if sizes is None:
                return value.read()
            if isinstance(value.expression, Size):
                sizes.append((path, value.expression))
            return value.value
        if isinstance(value, TracedScalar):  # a scalar argument as an operand
            if sizes is None:
                return value.read()
            sizes.append((path, value))
            return value.value
        if isinstance(value, slice) and any(isinstance(b, (TracedSize, TracedScalar, Proxy))
                                            for b in (value.start, value.stop, value.step)):
            return slice(*(self._symbolic(b, source, sizes, (*path, part)) for part, b in
                           zip(("start", "stop", "step"), (value.start, value.stop, value.step))))
        if isinstance(value, GeneratorProxy):
            return value.node
        if isinstance(value, Proxy):
            if value.tracer.finished:
                raise escaped(source)
            if value.tracer is not self:
                raise refused(UnsupportedError("a proxy from another capture (nested compile)",
                                               source=source))
            return value.node
        if is_namedtuple(value):
            raise refused(UnsupportedError(
                f"a namedtuple ({type(value).__name__}) holding traced values is not captured "
                "yet", source=source, hint="use a tuple or a dict"))
        if isinstance(value, (tuple, list)):
            return type(value)(self._symbolic(v, source, sizes, (*path, i))
                               for i, v in enumerate(value))
        if isinstance(value, dict):
            return {k: self._symbolic(v, source, sizes, (*path, k)) for k, v in value.items()}
        if isinstance(value, np.ndarray):
            created = self.created.get(id(value)) or \
                creation.literal_view(self.created, value, source)
            if created is not None and created.array is value:
                return self._creation_node(created, source)
            raise refused(UnsupportedError(
                "an array that is not an argument of the compiled function (a global, a closure "
                "variable, an object's attribute, or an array NumPy made outside the traced "
                "values) is used in a traced call", source=source, hint="pass it as an argument"))
        if isinstance(value, _CONSTANT_TYPES) or value in (bool, int, float, complex) or (
                isinstance(value, type) and issubclass(value, np.generic)):
            return value
        hint = "NumPy calls a Python function per piece or element there (np.piecewise, " \
            "np.vectorize, np.apply_along_axis, np.frompyfunc): write it with np.where or " \
            "np.select over whole arrays" if callable(value) else None
        raise refused(UnsupportedError(
            f"a constant of type {type(value).__name__} in a traced call", source=source,
            hint=hint))


    def created_array(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                      array: np.ndarray, source: str | None) -> Proxy:
        """A local array the user's code made (``np.zeros((n, m))``): a traced value, so updates
        of it are captured like updates of any value computed inside the function."""
        if self.finished:
            raise escaped()
        if self.selections:
            args, kwargs, _ = minmax.settle(self, None, None, args, kwargs, None)
        sizes: list[tuple[tuple[Any, ...], Any]] = []
        node = self.graph.create_node(
            Opcode.CALL_FUNCTION, target, self._symbolic(args, source, sizes, ("args",)),
            self._symbolic(kwargs, source, sizes, ("kwargs",)),
            meta={"tensor": TensorMeta.of(array), "source": source,
                  **size_arguments(sizes, self.scalar_used)})
        self._note_constant(node)
        self.arrays.append(weakref.ref(array))
        return Proxy(node, array, self)

    def _creation_node(self, created: Created, source: str | None) -> Any:
        when = "before it meets" if created.node is None else "after it met"
        if not created.unchanged():  # the program would make it as it was made
            raise refused(UnsupportedError(f"an array made by {created.target}() is modified "
                                           f"in place {when} a traced value", source=source,
                                           hint=creation.MADE_AND_FILLED))
        if created.node is None:
            sizes: list[tuple[tuple[Any, ...], Any]] = []
            args = self._symbolic(created.args, created.source, sizes, ("args",))
            kwargs = self._symbolic(created.kwargs, created.source, sizes, ("kwargs",))
            created.node = self.graph.create_node(
                Opcode.CALL_FUNCTION, created.target, args, kwargs,
                meta={"tensor": TensorMeta.of(created.made), "source": created.source,
                      **size_arguments(sizes, self.scalar_used)})
            self._note_constant(created.node)
        return created.node


def _is_array(value: Any) -> bool:
    return isinstance(value, (np.ndarray, np.generic)) and not isinstance(value, np.void)


def trace(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None = None,
          *, name: str | None = None, arg_names: list[str] | None = None,
          outcome: Outcome | None = None) -> GraphProgram:
    """Capture ``fn`` on example ``args``: a ``stax.capture/1`` program.

    Arrays among the (flattened) arguments become placeholders; every other leaf is a constant the
    capture is specialized on (spec §2.2: scalars enter the key by value). Wherever Python reads a
    traced value (``if``, ``int()``, an index) the example's answer is used and recorded as a data
    gate; the gates' backward slice is extracted right after capture, before any pass could delete
    the nodes that compute them (corollary 3.1). ``outcome``, when given, receives what the run
    computed (see :class:`Outcome`)."""
    with taking_loop_index_argument() as loop_index:
        return retried_with_values(lambda: _trace(fn, args, kwargs, name, arg_names, outcome,
                                                  loop_index), tree_leaves((args, kwargs)), outcome)


def _trace(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None,
           name: str | None, arg_names: list[str] | None, outcome: Outcome | None,
           loop_index: frozenset[str] | None) -> GraphProgram:
    kwargs = dict(kwargs or {})
    tracer = Tracer()
    tracer.item_slices = bool(loop_index)
    outcome = outcome if outcome is not None else Outcome()
    leaves, input_tree = tree_flatten((tuple(args), kwargs))
    traced_leaves: list[Any] = []
    inputs: list[str | None] = []
    names = arg_names if arg_names is not None else leaf_names(fn, tuple(args), kwargs)
    for leaf, leaf_name in zip(leaves, names):
        if isinstance(leaf, np.ndarray) and type(leaf) is not np.ndarray:
            raise UnsupportedError(f"argument of ndarray subclass {type(leaf).__name__} (its own "
                                   "semantics, such as masks, would be lost)",
                                   hint="pass a plain numpy.ndarray")
        if isinstance(leaf, np.ndarray):
            meta = TensorMeta.of(leaf)
            node = tracer.graph.placeholder(leaf_name, {"tensor": meta})
            # a lifted loop's item and carried scalars (loops.py) are the scalars they stand for
            example = leaf[()] if loop_index and leaf_name in loop_index and leaf.ndim == 0 \
                else example_view(leaf)
            proxy = Proxy(node, example, tracer)
            tracer.arguments[id(proxy)] = Argument(node, proxy.value, leaf.flags.writeable, proxy)
            outcome.arguments.append((tracer.arguments[id(proxy)], leaf))
            traced_leaves.append(proxy)
            inputs.append(node.target)
        elif type(leaf) is np.random.Generator:
            node = tracer.graph.placeholder(leaf_name, {"object": "numpy.random.Generator"})
            traced_leaves.append(GeneratorProxy(node, private_generator(leaf, outcome), tracer))
            inputs.append(node.target)
        elif value_kind(leaf) is not None and FOLLOWING.get():  # its uses followed (traced_scalars)
            traced_leaves.append(TracedScalar(leaf, len(inputs), tracer))
            inputs.append(None)
        else:  # (a scalar not followed, ``retried_with_values``: its value is read)
            tracer.scalar_read.update([len(inputs)] if value_kind(leaf) is not None else [])
            traced_leaves.append(leaf)
            inputs.append(None)

    traced_args, traced_kwargs = tree_unflatten(input_tree, traced_leaves)
    try:
        returned = _run_isolated(tracer, fn, traced_args, traced_kwargs, [
            leaf for leaf in leaves if type(leaf) is not np.random.Generator], outcome)
        # numbers converted only to be returned: eager's numbers, the program's traced values
        eager, result, conversions = result_conversions.settle(returned)
        if tracer.selections:  # max/min results returned: settled (minmax.py)
            out, out_tree = tree_flatten(result)
            result = tree_unflatten(out_tree, minmax.settled_result(tracer, out))
        after, after_tree = tree_flatten((traced_args, traced_kwargs))
        if after_tree != input_tree or any(a is not b for a, b in zip(after, traced_leaves)):
            # capture ran on copies of the argument containers: the caller's did not change,
            # and a compiled version would not change them either
            raise UnsupportedError("the function changes a tuple, list or dict it was passed (an "
                                   "append, an item assignment)", hint="return the new value "
                                   "instead; as it is, the function runs eagerly")
        outcome.finished, outcome.result = True, eager
        if (caught := tracer.caught()) is not None:
            raise caught
        if outcome.warnings is not None:  # reports a compiled version would not give again
            outcome.warnings.refuse_unrepeated()
        program = _program(tracer, fn, name, result, inputs, input_tree, conversions)
        if outcome.warnings is not None and outcome.warnings.untraced_under:
            # a constant underflowed (``x * np.exp(-s)``): calls whose state heeds underflow
            # decline, and NumPy reports it (it is ignored by default)
            program.info["constant_underflow"] = True
        return program
    except UnsupportedError as exc:  # whether Python decided anything from a scalar's value
        # (the refusal may be that value's, or that of a comparison's outcome)
        exc.values_read = bool(tracer.scalar_read or tracer.scalar_predicates)
        raise
    finally:
        tracer.finished = True  # a proxy kept past this point is an escaped traced value


def _program(tracer: Tracer, fn: Callable[..., Any], name: str | None, result: Any,
             inputs: list[str | None], input_tree: Any, conversions: dict[int, str]
             ) -> GraphProgram:
    """The capture program of a finished run: outputs, write-backs and the gates' slice."""
    out_leaves, output_tree = tree_flatten(result)  # (a returned float: a converted output)
    kinds = result_conversions.numbers_returned(tracer, out_leaves, conversions)
    output_tree = result_conversions.converting_tree(output_tree, kinds)
    outputs = []
    for i, leaf in enumerate(out_leaves):
        if isinstance(leaf, (TracedSize, TracedScalar)):  # returned: a constant of the version
            leaf = out_leaves[i] = leaf.read()
        if isinstance(leaf, np.ndarray) and not isinstance(leaf, Proxy):
            leaf = out_leaves[i] = constant_result(tracer, leaf)
        elif not isinstance(leaf, (Proxy, type, *_CONSTANT_TYPES)):
            raise UnsupportedError(f"the function returns a {type(leaf).__name__} object: a "
                                   "compiled version returns arrays, numbers and containers of "
                                   "them", hint="as it is, the function runs eagerly")
        output = tracer._symbolic(leaf, None)
        if isinstance(leaf, Proxy) and output.target in _PARTS and (
                output.meta.get("aliases") or not leaf.value.flags.writeable):
            # ``z.real`` of an argument: NumPy's view; ``np.imag`` of a real one: read-only zeros
            output.meta["numpy_call"] = True
        outputs.append(output)
    # arguments updated in place: their final values are extra outputs, written back by the caller
    updated = [a for a in tracer.arguments.values() if a.proxy.node is not a.node]
    tracer.graph.output((*outputs, *(a.proxy.node for a in updated)))
    counted = resolve_counts(tracer)  # selections' lengths as operands: the program's counts
    # selections consumed only by reductions: whole-array reductions, no count (their gates go)
    reduced = masked_reductions.rewrite(tracer.graph, tracer.gates, tracer.shape_read) + counted
    tracer.gates = masked.live_shape_gates(tracer.graph, tracer.gates, tracer.shape_read)
    masked.drop_superseded(tracer.graph, tracer.superseded, {g.node for g in tracer.gates})
    masked_reductions.erase_unused(tracer.graph, reduced, {g.node for g in tracer.gates})
    replay = None
    if tracer.gates:
        by_name = {n.name: n for n in tracer.graph.nodes}
        replay = backward_slice(tracer.graph, [by_name[g.node] for g in tracer.gates])
        drawn = [n for n in replay.nodes if n.meta.get("random")]
        if drawn:  # replaying the gate would draw again and advance the caller's generator
            raise UnsupportedError("a data gate depends on a random draw", node=drawn[0].name,
                                   source=drawn[0].source)
    return GraphProgram(CAPTURE_SCHEMA, name or getattr(fn, "__name__", "fn"), tracer.graph,
                        inputs, input_tree, output_tree, capture_info(fn, tracer), tracer.gates,
                        replay, [a.node.target for a in updated])


@result_conversions.returning_to
def _run_isolated(tracer: Tracer, fn: Callable[..., Any], args: tuple[Any, ...],
                  kwargs: dict[str, Any], leaves: list[Any], outcome: Outcome) -> Any:
    """Run ``fn`` on proxies without touching what the caller owns (spec §3.7): no random draw
    from a generator the capture does not own (refused before it happens: ``isolation.py``), no
    warning the call's execution will give again (``source.HeldWarnings``)."""
    with refusing_draws() as watch:
        found = scan(fn, leaves)  # with the draw wrappers in place: what it names is unguarded
        if found.unrepeatable is not None:
            kind, what = found.unrepeatable
            raise kind.error(f"it can reach {what}")
        if found.unreadable is not None:
            raise UnsupportedError("capture could not check which random generators the function "
                                   f"can reach: a value it names broke the look-up "
                                   f"({found.unreadable})")
        found.refuse_lookups()
        tracer.own_error_state = found.catches is not None  # its handlers may catch NumPy's
        try:
            with recording_creation(tracer, found.bound_names), holding_warnings() as warned:
                outcome.warnings = warned
                try:
                    tracer.error_state = error_state_at_entry()
                    result = (loops.rewritten(fn) or fn)(*args, **kwargs)
                except Exception as caught:
                    exc = stand_in_error(caught)  # (mostly the error itself: the user's own)
                    if watch.refused is None and not isinstance(exc, UnsupportedError) and \
                            not retried(exc, leaves):  # (a run again gives them)
                        warned.emit()  # the user's own error ends the call; eager warned first
                    settle_stored(tracer, fn, leaves, outcome)  # as eager left them
                    plain_exception(exc, tracer)
                    if exc is caught:
                        raise
                    raise exc from caught
        except BaseException:
            if watch.refused is not None:  # the function turned a refusal into another error
                raise watch.refused from None
            raise
        if watch.refused is not None:  # the function caught a refusal and went on
            raise watch.refused
        kept = settle_stored(tracer, fn, leaves, outcome)
        if kept is not None:  # put back as eager left it: this run stands for the eager call
            outcome.finished, outcome.result = True, result_conversions.settle(result)[0]
            raise UnsupportedError(f"a traced value escaped the compiled function: {kept} holds "
                                   "it after capture", hint="return it instead (a compiled "
                                   "version would not store it on later calls)")
    return result


def gate(value: Any) -> Any:
    """Declare that a traced number stays an array (spec §3.6): it is a runtime input of the graph,
    not a constant in the key. Only an explicit ``int()``/``float()`` on it makes it a data gate.

    Outside capture (plain arrays and numbers) it returns its argument unchanged.
    """
    if isinstance(value, Proxy):
        value.node.meta["gated"] = True
    return value


def leaf_function(target: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Make a NumPy-level function a single capture node named ``target`` when given proxies.

    On plain arrays the function runs eagerly, so a program behaves the same compiled or not.
    """
    def decorate(impl: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(impl)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for leaf in tree_flatten((args, kwargs))[0]:
                if isinstance(leaf, Proxy):
                    return leaf.tracer.record(Opcode.CALL_FUNCTION, target, args, kwargs, impl)
            return impl(*args, **kwargs)

        wrapper.__stax_target__ = target  # type: ignore[attr-defined]
        return wrapper
    return decorate
