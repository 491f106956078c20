"""A lifted step's steady calls: the step's arguments straight into its machine-code loop.

``Runner.__call__`` (``lifted_loops.py``) is general: a dict of the loop's locals (a copy of
each the body updates, a read-only view of each other array, Python numbers where the body
takes them), the layouts of the body's arguments to find its machine-code loop
(``ItemLoopRun``), that loop's own checks of its inputs, and after the run the results'
identities and conversions. On a small loop that is most of the call: Jacobi iterations on a
60x60 system (8 iterations, 5 us of machine code) spent 36 us in the step.

A call that ran every item (a ``while`` step: every iteration) in the machine-code loop arms
a ``SteadyCall``: what that call made of each argument, by position, and the types and layouts
of its arguments. A later call whose arguments have those types and layouts does only what
that call did: the same copies and views, the loop's inputs taken by position, the machine
code run, the same results, identities and reports (``Runner._results``). Anything else —
another layout, a constant of the machine code with another value, an iteration the loop does
not test true on entry — returns None having changed nothing, and the general path runs the
call. So does an item that stops the machine code (a floating-point event, a failed check):
the machine code writes no argument (a carried one is copied first, one updated in place is
the step's own copy), so the general path can run the call again from its start. Such a call
costs its items twice, so it disarms the steady call until a number of later calls (doubling
with each stop, up to ``_MOST_CALLS_APART``) have run as steadily again.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .item_loop_runs import FIRST_CHUNK, LAST_CHUNK, same_number

# what a call made of an argument (``Runner._values``)
_NUMBER, _COPY, _VIEW, _AS_IS = range(4)
#: the calls a stop keeps the steady call disarmed for, at most
_MOST_CALLS_APART = 64


class Tested:
    """A ``while`` step's call handed over after its test ran in Python (the loop's test before
    its first iteration): the general path goes on from the locals the test ran on (it may
    have updated one in place: ``while np.multiply(y, 0.9, out=y).max() > tol``) with its
    outcome as the input saying whether the loop goes on, so that the test runs, and warns,
    once."""

    def __init__(self, going: bool, values: list[Any]) -> None:
        self.going, self.values = going, values


def _layouts(arrays: Any) -> list[Any]:
    return [(a.dtype, a.shape, a.strides) if type(a) is np.ndarray else type(a) for a in arrays]


class SteadyCall:
    """A lifted step's call, by argument position, for arguments of the types and layouts of
    the call that armed it (``of``)."""

    def __init__(self, runner: Any, looped: Any, arrays: tuple[Any, ...]) -> None:
        self.runner, self.looped = runner, looped
        self.layouts = _layouts(arrays)
        inputs = runner.inputs
        #: per input of the step: what a call makes of it, and the value's conversion
        self.kinds = [(_NUMBER, runner.numbers[name]) if name in runner.numbers
                      else (_COPY, None) if name in runner.copied
                      else (_VIEW, None) if isinstance(a, np.ndarray) and a.ndim
                      else (_AS_IS, None) for name, a in zip(inputs, arrays)]
        position = {name: j for j, name in enumerate(inputs)}
        #: per argument of the body after its item: the step's input it is, or its constant
        params = [(position[p], None) if p in position else (None, runner.constants[p])
                  for p in runner.call_params]
        #: per input of the machine-code loop but the item's: (the step's input or None, the
        #: constant, the dtype of the 0-d array a number goes in as, or None)
        self.slots = [(None, None, None) if s == 0 else (*params[s - 1], looped.numbers.get(k))
                      for k, s in enumerate(looped.slots)]
        self.item_slot = looped.slots.index(0) if 0 in looped.slots else None
        #: the machine code's constants (``ItemLoopRun.baked``): (where the argument of the
        #: body is, the value)
        self.baked = [(params[i - 1], v) for i, v in looped.baked.items()]
        going = runner.going_input
        #: a ``while`` step's: the input saying whether the loop runs at all, else None
        #: where its test runs here in Python (``tested``)
        self.going = position.get(going) if going is not None else None
        self.tested = going is not None and self.going is None
        #: per result of the step: the loop's result (its last of that name, as the general
        #: path binds them in order), or the input it is, or its constant
        last = {name: k for k, name in enumerate(looped.outputs) if name is not None}
        self.outputs = [(last.get(name), position.get(name)) for name in runner.outputs]
        #: a carried input's slot -> the result that is its next value (a ``while`` step's
        #: next run)
        self.carried = {i: last[name] for i, name in looped.carried.items()}
        # the inputs some result may be: a view made of any other (the general path's guard
        # against a body writing its input) is one nothing sees, the machine code only reading
        # it; a ``while`` test run here in Python may see it
        escaping = {j for k, j in self.outputs if k is None and j is not None} | \
            {self.slots[s][0] for s in looped.loop.returned_inputs} - {None}
        if not self.tested:
            self.kinds = [(_AS_IS, None) if kind is _VIEW and j not in escaping else (kind, how)
                          for j, (kind, how) in enumerate(self.kinds)]
        #: whether the results' identities need checking: they are the loop's own buffers,
        #: views and copies made here, or NumPy scalars' 0-d arrays, in one pattern call
        #: after call, but for arguments given as they are, which a caller may pass as one
        #: object at two positions (``Runner._results``)
        self.identities = sum(self.kinds[j][0] is _AS_IS for j in escaping) > 1
        self.given = [j for j, name in enumerate(inputs) if name not in runner.copied]
        self.disarmed = 0  # calls left before the steady call runs again
        self.apart = 1  # the calls the next stop disarms it for

    @staticmethod
    def of(runner: Any, looped: Any, arrays: tuple[Any, ...]) -> SteadyCall | None:
        """The steady call of ``runner`` after a call of ``arrays`` that ran every item in
        ``looped``, or None where its calls are not all alike: it runs the loop as written
        in NumPy, or still captures; it makes a view of a local inside; a result is none of
        the loop's, the step's inputs' or its constants."""
        if runner.eager or runner.capturing or runner.views or runner.identities is None or \
                looped is None or looped.stale:
            return None
        named = {name for name in looped.outputs if name is not None}
        if any(name not in named and name not in runner.inputs and name not in runner.constants
               for name in runner.outputs):
            return None
        held = runner.steady
        if held is not None and held.looped is looped and held.layouts == _layouts(arrays):
            return held  # (its count of calls apart kept)
        return SteadyCall(runner, looped, arrays)

    def __call__(self, arrays: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """The step's results for ``arrays``, or None: the general path runs the call."""
        if self.disarmed > 0:  # (threads may take it below 0: armed again)
            self.disarmed -= 1
            return None
        if _layouts(arrays) != self.layouts:
            return None
        runner, loop, going = self.runner, self.looped.loop, self.runner.going_input
        arrays, items = runner.call_items(arrays)
        if self.going is not None:
            if not bool(arrays[self.going]):
                return None
        elif not items and going is None:
            return None
        values = []
        for (kind, how), a in zip(self.kinds, arrays):
            if kind is _NUMBER:
                a = how(a)
            elif kind is _COPY:
                a = np.array(a, copy=True, order="K")
            elif kind is _VIEW:
                a = a.view()
                a.flags.writeable = False
            else:
                a = np.asarray(a)
            values.append(a)
        for (j, constant), v in self.baked:
            a = constant if j is None else values[j]
            if a is not v and not same_number(a, v):
                return None
        if self.tested:  # the test as the general path runs it, on the locals
            local = dict(runner.constants)
            local.update(zip(runner.inputs, values))
            if not runner._tested(local):
                return Tested(False, values)
        inputs = [(constant if j is None else values[j]) if dtype is None else
                  np.array(constant if j is None else values[j], dtype)
                  for j, constant, dtype in self.slots]
        first = items[0] if going is None else 0
        if self.item_slot is not None:
            inputs[self.item_slot] = np.array(first, np.int64)
        if going is None:
            count, results, _, underflowed, exited = loop.run(inputs, first, items.step,
                                                              len(items))
            if count < len(items) and not exited:
                return self._stopped()
        else:
            count, chunk, underflowed = 0, FIRST_CHUNK, False
            while True:
                ran, results, _, under, exited = loop.run(inputs, 0, 1, chunk)
                count, underflowed = count + ran, underflowed or under
                if exited:
                    break
                if ran < chunk:
                    return self._stopped(Tested(True, values) if self.tested else None)
                for i, k in self.carried.items():  # the next run's inputs: this one's results
                    dtype = self.slots[i][2]
                    inputs[i] = results[k] if dtype is None else np.array(results[k], dtype)
                chunk = min(chunk * 4, LAST_CHUNK)
        self.apart = max(self.apart // 2, 1)
        return self._results(values, items, results, count, underflowed)

    def _stopped(self, handed: Tested | None = None) -> Tested | None:
        self.disarmed, self.apart = self.apart, min(self.apart * 2, _MOST_CALLS_APART)
        return handed

    def _results(self, values: list[Any], items: range, results: list[Any], count: int,
                 underflowed: bool) -> tuple[Any, ...]:
        """What the general path returns after the run (``Runner._results``)."""
        runner, floats = self.runner, self.looped.floats
        local: dict[str, Any] = {}
        for name, (k, j) in zip(runner.outputs, self.outputs):
            if k is not None:
                local[name] = float(results[k]) if name in floats else results[k]
            else:
                local[name] = values[j] if j is not None else runner.constants[name]
        runner._ran(local, count, underflowed, items)
        # (``_settle`` acts on a ``while`` step that ran no iteration; this one ran some)
        given = {runner.inputs[j]: values[j] for j in self.given} if self.identities else None
        return runner._results(local, given, items)
