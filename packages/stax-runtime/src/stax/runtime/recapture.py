"""A function whose unrolled loops make too big a program, captured again with them lifted.

``CompiledFunction._compile`` captures a function with loops under ``kernel_budget`` and a gate
budget; past either (``TooManySteps``, ``TooManyGates``) the function is captured again with
every loop lifted. Past ``FUNCTION_BUDGET`` alone (``TooManyFunctions``: an unrolled loop of
transcendentals, seconds of LLVM) the unrolled program would still compile: where a lifted loop
then runs in NumPy (its body does not compile on its own), the unrolled program is compiled
after all, slowly but natively (a review's find: a loop of sines with a ``break`` at its index
went from 20 kernels to NumPy's speed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stax.codegen.program_plan import TooManyFunctions
from stax.trace import loops
from stax.trace.gate_budget import gate_budget

from . import logs
from .lifted_first_runs import collecting_runners


def captured_lifted(build: Callable[[], Any], why: Exception, outcome: Any, budget: Any,
                    log: Any, name: str) -> Any:
    """The version ``build`` makes with every loop lifted, or unrolled where ``why`` was the
    function budget and a lifted loop runs in NumPy."""
    logs.emit("loops", log, f"{name}: too many steps, kernels or data gates with its loops "
              "unrolled: captured again with them lifted")
    outcome.undo_untraced_updates()
    with loops.lifting_every_loop(), gate_budget(budget), collecting_runners() as lifted:
        version = build()
    if isinstance(why, TooManyFunctions) and any(r.eager for r in lifted):
        logs.emit("loops", log, f"{name}: a lifted loop runs in NumPy: compiled unrolled after "
                  "all")
        outcome.undo_untraced_updates()
        with gate_budget(budget):
            version = build()
    return version
