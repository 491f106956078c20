"""A backend as an object: which machine code it makes (its identity), what it can emit (the op
basis, the dtypes its loops take), where its kernels stop matching NumPy (numeric limits), how it
weighs work (cost model, materialization policy) and how its code is keyed in the disk cache.

The pipeline takes one (``generate(program, target=...)``), the runtime selects one by device
(``devices.target_for``), and the loop layer receives its limits and dtypes as options. A target
is made on first use: importing Stax asks LLVM nothing about the host.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stax.loop import FloatLimits, LoopOptions

from .version import CODEGEN_VERSION


@dataclass(frozen=True)
class Identity:
    """The machine a target makes code for: for a CPU, LLVM's triple, CPU name and feature
    string (``+avx2,-avx512f,...``), as the artifact's ``target`` records them."""

    device: str
    triple: str
    cpu: str
    features: str

    def has(self, feature: str) -> bool:
        """Whether the feature string enables ``feature`` (LLVM's name, without the ``+``)."""
        return f"+{feature}" in self.features.split(",")

    @property
    def fma(self) -> bool:
        """Whether the CPU fuses multiply-add (LLVM's x86 ``fma`` feature): exact products in
        one instruction. Where the feature string does not say so, kernels take Dekker's exact
        products instead, which are as exact and slower."""
        return self.has("fma")

    @property
    def vector_bits(self) -> int:
        """The widest SIMD register, in bits: 512 with AVX-512, 256 with AVX, 128 with SSE2 or
        NEON, 0 where the features name none of these."""
        for feature, bits in (("avx512f", 512), ("avx", 256), ("sse2", 128), ("neon", 128)):
            if self.has(feature):
                return bits
        return 0

    @property
    def tuned_bits(self) -> int:
        """The vector width kernels are tuned for: ``vector_bits`` unless the features tune an
        AVX-512 CPU for 256-bit vectors (``+prefer-256-bit``, ``cpu/vector_width.py``)."""
        widest = self.vector_bits
        return 256 if widest > 256 and self.has("prefer-256-bit") else widest

    def key(self) -> tuple[str, ...]:
        """What decides the machine code made for this identity (a disk-cache key's part)."""
        return self.triple, self.cpu, self.features

    def to_json(self) -> dict[str, str]:
        return {"device": self.device, "triple": self.triple, "cpu": self.cpu,
                "features": self.features}


@dataclass(frozen=True)
class NumericLimits:
    """Where a target's native kernels stop matching NumPy. Beyond a limit the loop layer adds a
    check, and a call that crosses it runs as NumPy (``lower_opgraph``'s options)."""

    #: (float dtype, bound) pairs: sin, cos and tan of that dtype are native for finite |x|
    #: below the bound (their argument reduction's range); a dtype not listed is good for every
    #: argument
    trig_reduction: tuple[tuple[str, float], ...]
    #: (float dtype, bound) pairs: fmod(a, b) is exact for |a / b| below the bound
    fmod_exact_quotient: tuple[tuple[str, float], ...]

    def fmod_limit(self, dtype: str) -> float:
        """The ``fmod_exact_quotient`` bound of ``dtype`` (KeyError for another dtype)."""
        return dict(self.fmod_exact_quotient)[dtype]


@dataclass(frozen=True)
class Target:
    """A frozen description of a backend; ``devices.target_for(device)`` gives the one to use."""

    identity: Identity
    #: op-graph ops lowered and emitted natively; others are decomposed into these when they
    #: have a decomposition (spec §4.8), or run as NumPy steps
    basis: frozenset[str]
    #: dtypes its loops take; values of other dtypes are NumPy's (an extern step)
    loop_dtypes: frozenset[str]
    limits: NumericLimits
    #: the materialization policy ``lower_opgraph(materialize=...)`` asks (spec §6.6)
    materialize: Callable[[Any], bool]
    #: the cost model: cost units to compute one element of a loop expression (the plan's
    #: parallel threshold weighs work with it)
    element_cost: Callable[[Any], int]
    #: the version of the compiler behind the emitter (llvmlite's for the CPU)
    compiler_version: str
    #: cost units (``element_cost`` times the elements visited) from which a kernel is split
    #: over the thread pool (the CPU's: measured per machine, ``cpu/parallel_work.py``)
    parallel_work: int = 1 << 20
    #: whether an assignment into a buffer nothing else reads is a kernel over its region
    #: (``LoopOptions.update_in_place``) rather than a select over the whole array
    update_in_place: bool = True
    #: whether kernels compute complex values as pairs of floats (``LoopOptions.complex_parts``);
    #: otherwise a program with a complex value runs eagerly
    complex_parts: bool = True
    #: whether its kernels run a group of several phases down columns (``nesting.py``: column
    #: statistics, each phase over a block of columns in turn); otherwise such a group takes a
    #: row nest, a column a row
    phased_columns: bool = False
    #: whether its kernels write an updated argument's final value over the argument once the
    #: call stands (``LoopOptions.overwrite_arguments``); otherwise the caller copies it back
    overwrite_arguments: bool = False
    #: whether its kernels know one float operation's events exactly (the CPU's flags), so a
    #: late kernel applying an in-place ufunc reports them after it wrote the argument
    #: (``LoopOptions.late_reports``); otherwise a twin decides them first
    late_reports: bool = False

    @property
    def device(self) -> str:
        return self.identity.device

    @property
    def loop_options(self) -> LoopOptions:
        """What the loop layer must know of this target (``lower_opgraph(options=...)``): the
        ops and dtypes its loops take and where its kernels need a check that sends a call to NumPy."""
        return LoopOptions(dtypes=self.loop_dtypes, ops=self.basis,
                           trig_reduction_limit=FloatLimits(**dict(self.limits.trig_reduction)),
                           fmod_exact_quotient=FloatLimits(**dict(self.limits.fmod_exact_quotient)),
                           update_in_place=self.update_in_place,
                           complex_parts=self.complex_parts,
                           overwrite_arguments=self.overwrite_arguments,
                           late_reports=self.late_reports)

    @property
    def cache_key(self) -> tuple[str, ...]:
        """What besides its input decides what this target makes: the codegen and compiler
        versions and the identity. Part of every disk-cache key of its machine code and plans."""
        return (CODEGEN_VERSION, self.compiler_version, f"parallel {self.parallel_work}",
                *self.identity.key())
