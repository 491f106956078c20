"""stax.loop — loop-level IR: Pointwise/Reduction bodies as expression DAGs (spec §6)."""

from .expr import (
    Binary,
    Cast,
    Const,
    Expr,
    GuardedLoad,
    Index,
    IndirectLoad,
    KindTable,
    Load,
    Select,
    Ternary,
    Unary,
    affine_loads,
    format_expr,
    loads,
    postorder,
    rewrite,
)
from .index import Affine, linear_index
from .interchange import rows_apart
from .ir import (
    LOOPIR_SCHEMA,
    BufferRef,
    ComputedBuffer,
    ExternCall,
    InputBuffer,
    LoopProgram,
    OutputRef,
    Pointwise,
    Reduction,
    Scan,
    effect_order,
    index_width,
    load_loopir,
    loop_extents,
    node_loads,
    rvar,
    xvar,
)
from .lowering import LOWERINGS, MaterializePolicy, Reuse, lower_opgraph
from .operators import OPERATORS, LoopOperator, get_operator
from .options import FloatLimits, LoopOptions
from .rules import RULE_MODULES

__version__ = "0.1.0"

__all__ = [
    "LOOPIR_SCHEMA", "LOWERINGS", "OPERATORS", "RULE_MODULES", "Affine", "Binary", "BufferRef",
    "Cast", "ComputedBuffer", "Const", "Expr", "ExternCall", "FloatLimits", "GuardedLoad", "Index",
    "IndirectLoad", "InputBuffer", "KindTable", "Load", "LoopOperator", "LoopOptions", "LoopProgram",
    "MaterializePolicy", "OutputRef", "Pointwise", "Reduction", "Reuse", "Scan", "Select", "Ternary",
    "Unary", "affine_loads", "effect_order", "format_expr", "get_operator", "index_width",
    "linear_index", "load_loopir", "loads", "loop_extents", "lower_opgraph", "node_loads",
    "postorder", "rewrite", "rows_apart", "rvar", "xvar",
]
