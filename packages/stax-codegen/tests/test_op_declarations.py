"""The CPU backend's op tables agree with the op declarations (``stax.ir``): each property is
declared once, on the op, and a hand table here that drifts from it fails."""

from stax.codegen.cpu.costs import FUNCTION_NS
from stax.ir import CostClass, ops_of_cost


def test_every_priced_op_is_declared_a_function_or_a_division_and_every_one_is_priced():
    """``FUNCTION_NS`` holds measured times per element: exactly the ops declared a math routine
    or a long-latency instruction (``CostClass.FUNCTION``, ``CostClass.DIVIDE``)."""
    assert set(FUNCTION_NS) == ops_of_cost(CostClass.FUNCTION, CostClass.DIVIDE)
