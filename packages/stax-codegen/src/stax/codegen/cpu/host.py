"""The host CPU as LLVM sees it: llvmlite's binding with the native target initialized, and the
host's identity. Both are made on first use, never at import."""

from __future__ import annotations

import functools
from typing import Any

import llvmlite
import llvmlite.binding as binding

from ..diskcache import directory_from_environment
from ..target import Identity
from ..version import CODEGEN_VERSION
from . import vector_width

#: LLVM's options for every module. A kernel with 32-bit indices computes them from its 64-bit
#: loop counters truncated, so the loop vectorizer checks one no-wrap assumption per access at
#: run time (once, before the loop); past 16 (its default) it gave up: a complex FIR filter of 8
#: taps or more ran scalar. The checks are exact, so more of them cost only their test.
LLVM_OPTIONS = ("-vectorize-scev-check-threshold=256",)
#: the compiler behind the CPU's kernels: llvmlite's version and the options it runs with
COMPILER_VERSION = " ".join((llvmlite.__version__, *LLVM_OPTIONS))


@functools.cache
def llvm() -> Any:
    """llvmlite's binding, with the host target initialized and ``LLVM_OPTIONS`` set (once)."""
    binding.initialize_native_target()
    binding.initialize_native_asmprinter()
    _set_options()
    return binding


@functools.cache
def _set_options() -> None:
    for option in LLVM_OPTIONS:
        binding.set_option("", option)


@functools.cache
def host_identity() -> Identity:
    """This process's CPU: LLVM's triple, CPU name and features, the features saying which
    vector width the kernels are tuned for (``vector_width.py``: measured where in question)."""
    llvm_ = llvm()
    triple, cpu = llvm_.get_process_triple(), llvm_.get_host_cpu_name()
    features = llvm_.get_host_cpu_features().flatten()
    bits, _ = vector_choice()
    if bits:
        features = vector_width.with_width(features, bits)
    return Identity("cpu", triple, cpu, features)


@functools.cache
def vector_choice() -> tuple[int, str]:
    """(bits, why): the vector width this host's kernels are tuned for (0: the host has one
    width, no AVX-512) and how it was decided: once per machine, the decision being recorded
    in the cache directory (``vector_width.recorded``), else once per process."""
    llvm_ = llvm()
    return vector_width.recorded(llvm_, llvm_.get_process_triple(), llvm_.get_host_cpu_name(),
                                 llvm_.get_host_cpu_features().flatten(),
                                 directory_from_environment())


def machine_key() -> tuple[str, ...]:
    """What decides this host's machine code for a given LLVM IR (a disk-cache key's part): the
    codegen and compiler versions and the host's identity."""
    return (CODEGEN_VERSION, COMPILER_VERSION, *host_identity().key())
