"""LLVM loop hints: how many vectors of an innermost loop's iterations to interleave.

LLVM's loop vectorizer interleaves a loop without reductions only when its body is small (cheap
per iteration): a long element-wise body — a tanh, an exp with its surroundings — runs one
vector at a time, one long dependency chain an iteration, and an out-of-order core cannot find
enough independent work across iterations to hide it. On an Intel Xeon (AVX-512, LLVM cpu
``rocketlake``, 4M float32) four vectors at a time made tanh-GELU 1.53 -> 1.19 ms and tanh
1.28 -> 0.95 ms; exp (LLVM interleaves it already), log and sin float64 and a polynomial stayed
within noise. A hint is given to element-wise innermost loops at least ``HEAVY_WORK`` units
(``costs.work``) an element and at least ``MIN_ITERATIONS`` long (a short row would run mostly
in the vector epilogue).

A loop that holds another, and a loop of fewer than ``MIN_ITERATIONS`` iterations known at
compile time in a nest of fewer than ``SMALL_NEST`` iterations, are not unrolled
(``llvm.loop.unroll.disable``): LLVM fully unrolled the short
loops of small shapes, vectorized and not, a layer norm of (2, 16, 32) float32 growing tenfold
in IR and taking 1.2 s to optimize (0.02 s without), a transformer block 3.6 s; long innermost
loops, where unrolling can pay, are left to LLVM."""

from __future__ import annotations

from llvmlite import ir

from stax.ir.sizes import hint, is_symbolic

#: the element-wise work (``costs.UNIT_NS`` units) from which an innermost loop is interleaved
HEAVY_WORK = 16
#: vectors interleaved in such a loop
INTERLEAVE = 4
#: the shortest loop (iterations, known at compile time) given the hint
MIN_ITERATIONS = 256


def interleave_count(work: int | None, extent: int | None) -> int:
    """The interleave count to ask of LLVM for an innermost loop of ``extent`` iterations whose
    body does ``work`` units an element (None or negative: not an element-wise innermost loop);
    1 leaves the decision to LLVM. A size-generic loop's count is not its traced hint: a
    kernel traced at a few elements runs at any size (float32 ``x ** 3.25`` over 1M elements
    1.30 ms without the interleave, 0.68 with it)."""
    if work is None or work < HEAVY_WORK or extent is None or \
            (not is_symbolic(extent) and hint(extent) < MIN_ITERATIONS):
        return 1
    return INTERLEAVE


#: a nest of fewer iterations in all than this is small: its short loops are not unrolled
SMALL_NEST = 4096
#: a sum of fewer elements than this NumPy adds in order (its pairwise blocks are 8 long):
#: such a reduction loop stays unrolled, which keeps LLVM's order NumPy's
SEQUENTIAL_SUM = 8


def short_loop(extent: int | None, around: int) -> bool:
    """Whether a loop's iteration count is known at compile time and below ``MIN_ITERATIONS``
    (LLVM would unroll it fully) in a small nest (``around``: the iterations of the loops around
    it, 0 when unknown). A short loop inside a long one stays LLVM's to unroll: twelve columns
    of each of 8,000 rows, unrolled, are twelve stores a row (8.2x NumPy; 1.5x not unrolled)."""
    return extent is not None and 0 < around and not is_symbolic(extent) and \
        hint(extent) < MIN_ITERATIONS and around * hint(extent) < SMALL_NEST


#: the vectors a short row must hold to be vectorized along itself: one for element-wise work
#: (with two, rows of one and a half vectors stayed unrolled: float32 (2000, 24) minus a column
#: 1.3x NumPy's time, 0.25x with one); two for a reduction (a row of one vector summed along
#: itself ends in a horizontal sum per row: float64 rows of 8 normalized 1.5x slower than
#: LLVM's vectorizing across rows)
ROW_VECTORS = 1
REDUCTION_ROW_VECTORS = 2
#: the longest row kept rolled so: LLVM does not fully unroll longer ones anyway
IN_ROW_LIMIT = 64
#: LLVM's loop vectorizer takes a loop known to run fewer times than this only where no
#: iteration is left for a scalar tail (``TinyTripCountVectorThreshold``): a rolled row of 9
#: to 15 float64 ran scalar (``X * w`` on (4000, 9): 12.5 us rolled, 4.6 unrolled, NumPy 21)
TINY_TRIP_COUNT = 16


def in_row_vectors(extent: int | None, around: int, lanes: int, reduction: bool = False) -> bool:
    """Whether a short innermost loop (known extent, inside other loops) holds enough vectors
    to be vectorized along itself (``ROW_VECTORS``, ``REDUCTION_ROW_VECTORS``): it is then kept
    rolled. Unrolled, LLVM vectorized across rows instead, each vector gathering one element of
    16 rows behind run-time checks: ``X * w`` on (2000, 32) float64 57 -> 13 us (NumPy 33),
    a float32 row sum of (2000, 32) 28 -> 12 us (NumPy 45). Shorter rows stay LLVM's to unroll
    (``short_loop``: twelve float32 columns of 8000 rows), and so do rows LLVM would not
    vectorize along (``TINY_TRIP_COUNT``)."""
    vectors = REDUCTION_ROW_VECTORS if reduction else ROW_VECTORS
    return extent is not None and 0 < around and not is_symbolic(extent) and \
        vectors * lanes <= hint(extent) <= IN_ROW_LIMIT and \
        (hint(extent) % lanes == 0 or hint(extent) >= TINY_TRIP_COUNT)


class _LoopID(ir.values.MDValue):
    """A loop's ID: ``distinct !{!self, hints...}``; LLVM takes a loop's hints only from a node
    whose first operand is itself, which ``Module.add_metadata`` cannot make."""

    def descr(self, buf: list[str]) -> None:
        hints = ", ".join(op.get_reference() for op in self.operands)
        buf += (f"distinct !{{ {self.get_reference()}, {hints} }}", "\n")


def masked_tail(extent: int | None, lanes: int) -> bool:
    """Whether LLVM would vectorize a loop of ``extent`` iterations (known at compile time)
    only by folding its tail into masked vectors: fewer than ``TINY_TRIP_COUNT``, no whole
    number of vectors (``LoopVectorize``'s low-trip-count rule: no scalar epilogue there)."""
    return extent is not None and not is_symbolic(extent) and \
        hint(extent) < TINY_TRIP_COUNT and hint(extent) % max(lanes, 1) != 0


def loop_id(module: ir.Module, interleave: int = 1, unroll: bool = True,
            vectorize: bool = True) -> ir.values.MDValue:
    """A new loop ID asking for ``interleave`` vectors an iteration, no unrolling where
    ``unroll`` is False, and no loop vectorization where ``vectorize`` is False (one per loop:
    an ID is distinct). A kernel that reads the CPU's exception flags keeps a short loop LLVM
    would vectorize with a masked tail (``masked_tail``) scalar: the masked loads fill the
    lanes past the end with zeros, which the unmasked operations then compute on (``1.0 / x``
    of 9 elements divided by zero in 7 lanes: a "maybe" event every call, each run again by
    the precise kernels, 4.8 us for NumPy's 2)."""
    hints = []
    if not vectorize:
        hints.append(module.add_metadata([
            ir.MetaDataString(module, "llvm.loop.vectorize.enable"),
            ir.Constant(ir.IntType(1), 0)]))
    if interleave > 1:
        hints.append(module.add_metadata([ir.MetaDataString(module, "llvm.loop.interleave.count"),
                                          ir.Constant(ir.IntType(32), interleave)]))
    if not unroll:
        hints.append(module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")]))
    return _LoopID(module, hints, name=str(len(module.metadata)))
