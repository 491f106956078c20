"""Python scalar arguments as run-time inputs of a generic version (issue 15, item 3).

Capture records where a Python ``int`` or ``float`` argument was an operand of a traced call
(``meta["scalar_args"]``, ``stax.trace.traced_sizes.TracedScalar``) and whether Python decided
anything from its value (``info["scalar_read"]``). ``scalar_inputs`` rewrites such a capture so
the argument is an input: a 0-d ``float64``/``int64`` placeholder, converted where it is used to
the dtype NumPy converts a *weak* Python scalar to (NEP 50: ``x_f32 * k`` computes in float32,
``k`` rounded to it once) — the ``astype`` NumPy's own conversion does. Only uses whose NumPy
loop takes the scalar that way are rewritten: element-wise arithmetic, comparisons, maxima and
``where`` with floating-point arrays. ``x ** k`` (NumPy's fast paths for some exponents), integer
arrays (an ``int`` past the array's range raises) and any other use keep the value in the key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .graph import Node, Opcode
from .meta import TensorMeta
from .program import GraphProgram
from .symbolic_shapes import replaced_argument

#: calls whose weak scalar operand NumPy converts to the floating-point arrays' dtype
WEAK_OPERAND_TARGETS = frozenset({
    "operator.add", "operator.sub", "operator.mul", "operator.truediv",
    "operator.lt", "operator.le", "operator.gt", "operator.ge", "operator.eq", "operator.ne",
    "numpy.add", "numpy.subtract", "numpy.multiply", "numpy.divide", "numpy.true_divide",
    "numpy.less", "numpy.less_equal", "numpy.greater", "numpy.greater_equal", "numpy.equal",
    "numpy.not_equal", "numpy.maximum", "numpy.minimum", "numpy.fmax", "numpy.fmin",
    "numpy.where",
})
#: the dtype of the input a scalar argument of each Python type is passed in
INPUT_DTYPES = {"float": "float64", "int": "int64"}


def scalar_inputs(program: GraphProgram, leaves: Mapping[int, str],
                  read: Sequence[int] = ()) -> str | None:
    """Make each flat argument ``leaf`` (of Python type ``leaves[leaf]``: ``"float"``/``"int"``)
    an input of ``program``, in place; None when done, else why not (the program may then be
    half rewritten: rewrite a copy). ``read``: the arguments Python decided something from
    (capture's ``info["scalar_read"]``)."""
    graph = program.graph
    taken = {str(n.target) for n in graph.nodes if n.op is Opcode.PLACEHOLDER}
    first = next((n for n in graph.nodes if n.op is not Opcode.PLACEHOLDER), None)
    if first is None:
        return "the graph has no operation"
    placeholders: dict[int, Node] = {}
    for leaf, kind in sorted(leaves.items()):
        if leaf in set(read):
            return f"the function decides something in Python from argument {leaf}'s value"
        name = next(f"scalar{leaf}" + "_" * k for k in range(len(taken) + 1)
                    if f"scalar{leaf}" + "_" * k not in taken)
        # among the placeholders in argument order (an executable's inputs are in graph
        # order): before the next argument's, else after the last
        later = [program.inputs[i] for i in range(leaf + 1, len(program.inputs))
                 if program.inputs[i] is not None]
        by_target = {str(n.target): n for n in graph.nodes if n.op is Opcode.PLACEHOLDER}
        at = by_target.get(str(later[0])) if later else None
        with graph.inserting_before(at if at is not None else first):
            placeholders[leaf] = graph.placeholder(
                name, {"tensor": TensorMeta((), INPUT_DTYPES[kind], ())})
        program.inputs[leaf] = placeholders[leaf].target
    for node in list(graph.nodes):
        for path, leaf in node.meta.get("scalar_args", ()):
            if leaf not in placeholders:
                continue
            target = _weak_dtype(node)
            if target is None:
                return f"{node.name}: argument {leaf} is an operand of {node.target}(), " \
                       "which takes it other than as a weak scalar of a float array"
            with graph.inserting_before(node):
                cast = graph.call_method("astype", (placeholders[leaf], target),
                                         name=f"{placeholders[leaf].name}_as",
                                         meta={"tensor": TensorMeta((), target, ())})
            where, *rest = path
            if where == "args":
                node.set_args(replaced_argument(node.args, rest, cast), node.kwargs)
            else:
                node.set_args(node.args, replaced_argument(node.kwargs, rest, cast))
    return None


def _weak_dtype(node: Node) -> str | None:
    """The dtype NumPy converts a weak scalar operand of ``node`` to: its floating-point array
    operands' common dtype (None where the call takes a scalar otherwise)."""
    if node.op is not Opcode.CALL_FUNCTION or node.target not in WEAK_OPERAND_TARGETS or \
            node.kwargs or node.tensor is None:
        return None
    arrays = [a.tensor.dtype for a in node.args if isinstance(a, Node) and a.tensor is not None]
    if node.target == "numpy.where":
        arrays = arrays[1:] if node.args and isinstance(node.args[0], Node) else []
    floats = [d for d in arrays if np.dtype(d).kind == "f" and np.dtype(d).itemsize >= 4]
    if not floats or len(floats) != len(arrays):
        return None
    dtype = np.result_type(*floats).name
    if node.tensor.dtype not in (dtype, "bool"):
        return None
    return dtype
