"""A lifted loop's items in one machine-code loop (``stax.codegen.cpu.item_loop``) for the
layouts of the body's arguments: ``ItemLoopRun``, made by the runners of ``lifted_loops`` and
``lifted_while``.

The body's version may be exact in a scalar input of the step (its value a constant of the
machine code: ``baked``; a call with another value makes the loop again from the body's
version then) or generic in it (``ScalarArguments``: the value a 0-d input, ``numbers``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stax.ir.scalar_inputs import input_dtype

from . import config, logs

#: a ``while`` step's first machine-code run takes this many iterations, each next one four
#: times more, up to ``LAST_CHUNK``: Python regains control between runs (Ctrl-C ends a loop
#: that never ends)
FIRST_CHUNK = 64
LAST_CHUNK = 1 << 16
#: a call's ``values`` entry for the last item its run ran (a loop ending at a test: the
#: target the function returns); per call, as several threads may run one step at once
LAST_ITEM = "__stax_last_item"


def _names(names: dict[int, str | None], pairs: Any) -> str:
    return ", ".join(str(names[i]) for i, _ in pairs) or "none"


def same_number(a: Any, b: Any) -> bool:
    """Whether two numbers are one constant of machine code: their type and bits (-0.0 is not
    0.0; a NaN is itself)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return a.hex() == b.hex()
    if isinstance(a, np.generic):
        return a.tobytes() == b.tobytes()
    return bool(a == b)


class ItemLoopRun:
    """The body's items in machine code (``stax.codegen.cpu.item_loop``), for arguments of the
    layouts it was made for: each array the body rebinds or updates comes back with the layout
    it went in with."""

    def __init__(self, loop: Any, slots: list[int], carried: dict[int, str],
                 outputs: list[str | None], baked: dict[int, Any] | None = None,
                 numbers: dict[int, Any] | None = None, floats: frozenset[str] = frozenset()
                 ) -> None:
        self.loop, self.slots, self.carried, self.outputs = loop, slots, carried, outputs
        #: the body's arguments that are numbers its machine code holds as constants (a
        #: version exact in a scalar input of the step): a call with others cannot run it
        self.baked = baked or {}
        #: the slots that are numbers the executable takes as 0-d inputs (``ScalarArguments``)
        self.numbers = numbers or {}
        self.stale = False  # a call's numbers differed from the baked ones: made again
        self.floats = floats  # carried Python floats (``Runner.carried``), their 0-d buffers

    @staticmethod
    def of(runner: Any, args: tuple[Any, ...], exit: int | None = None) -> ItemLoopRun | None:
        """With ``exit``, the body's result that says whether another item runs (a ``while``
        loop's step, whose body need not read its item)."""
        site = runner.site
        _, _, version = runner.compiled.direct(*args)
        if version is None or version.flat is None:
            return None
        executable, slots = version.flat
        if getattr(executable, "predicates", None):  # comparisons of its scalars: per item
            logs.emit("loops", config.current().logs, f"loop at {site.source}: items run one "
                      "call each: the body branches on comparisons of its scalars")
            return None
        numbers = {}  # a version generic in scalar inputs: its exact executable, and those
        if getattr(executable, "sized", True) is None:  # inputs as 0-d arrays
            numbers = {p: input_dtype(kind) for p, kind in executable.scalars.items()}
            executable = executable.inner
        if not hasattr(executable, "item_loop"):
            return None
        leaf = {name: 1 + n for n, name in enumerate(runner.call_params)}  # the item: leaf 0
        outputs = [None if name in (site.target, site.row) or name in runner.constants or
                   name in runner.views or name in site.scratch or name in runner.counted
                   else name
                   for name in site.returned] + runner.bases
        carried = {slots.index(leaf[name]): k for k, name in enumerate(outputs)
                   if name is not None and name in leaf and leaf[name] in slots}
        if 0 not in slots and exit is None and not carried:
            return None  # a body reading neither its item nor what an item leaves
        inputs = [np.array(args[s], numbers[p]) if p in numbers else args[s]
                  for p, s in enumerate(slots)]
        loop = executable.item_loop(inputs, slots.index(0) if 0 in slots else None, carried, exit)
        if not isinstance(loop, str) and any(  # a carried float the version holds as a
                name in runner.carried and loop.plan.slots.outputs[k][0] < 0  # constant (read:
                for k, name in enumerate(outputs)):  # exact in it), which no buffer carries
            loop = "a carried float is a constant of the body's version"
        if isinstance(loop, str):
            logs.emit("loops", config.current().logs, f"loop at {site.source}: items run one "
                      f"call each: {loop}")
            return None
        names = {i: outputs[k] for i, k in carried.items()}
        plan = loop.plan
        logs.emit("loops", config.current().logs, f"loop at {site.source}: items run in one "
                  f"machine-code loop ({len(plan.slots.kernels) - len(plan.skipped)} kernels an "
                  f"item; updated in place: {_names(names, plan.aliases)}; buffers moved: "
                  f"{_names(names, plan.nexts)})")
        baked = {i: a for i, a in enumerate(args) if i not in slots and
                 (type(a) in (int, float) or isinstance(a, np.generic))}
        return ItemLoopRun(loop, slots, names, outputs, baked, numbers, runner.carried)

    def run(self, values: dict[str, Any], args: tuple[Any, ...], items: range, t: int
            ) -> tuple[int, bool, bool] | None:
        """Run items ``t...`` until the end or an item that stops it (its inputs then bound in
        ``values``): the number run, whether one may have underflowed and whether a false test
        ended the loop (a ``while`` step's; returned, not kept: threads share this loop), or
        None for arguments of other layouts."""
        for i, v in self.baked.items():  # (the constant itself, mostly: one comparison)
            if args[i] is not v and not same_number(args[i], v):
                self.stale = True
                return None
        inputs = [args[s] for s in self.slots]
        for p, dtype in self.numbers.items():
            inputs[p] = np.array(inputs[p], dtype)
        if not self.loop.fits(inputs):
            return None
        ran, results, inputs, underflowed, exited = self.loop.run(inputs, items[t], items.step,
                                                                  len(items) - t)
        if ran == len(items) - t or exited:
            for name, value in zip(self.outputs, results):
                if name is not None:
                    values[name] = float(value) if name in self.floats else value
        else:
            for i, name in self.carried.items():
                values[name] = float(inputs[i]) if name in self.floats else inputs[i]
        return ran, underflowed, exited
