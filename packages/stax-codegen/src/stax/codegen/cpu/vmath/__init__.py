"""Transcendental functions as straight-line LLVM IR (no libm call per element): float32, and
float64 tanh. float64 functions within 1 ulp are in ``vmath64`` (double-double steps).

``llvm.exp.*`` and friends become scalar libm calls, which keep a loop from vectorizing. These are
written with arithmetic, compares, selects and bit casts only, so LLVM widens them with the rest
of a fused loop. Each has a measured error bound against a higher-precision reference that the
tests check (ARCHITECTURE.md §4). One module per family:

- ``double``: the double kernels (``exp64``, ``log64``) the float32 functions computed in double
  build on, float64 ``tanh64``, and the shared constants and helpers;
- ``lanes32``: exp, log, log2, log10, log1p and tanh in float32 lanes, where a fitted polynomial
  reaches the bound (twice the vector width of the double path);
- ``trig32``: sin, cos and tan over the whole float32 range (Payne–Hanek), in double;
- ``via_double``: the other float32 functions, computed in double and rounded once.

Which routine computes which loop operator in which dtype is ``cpu/functions.py``'s table.
"""
