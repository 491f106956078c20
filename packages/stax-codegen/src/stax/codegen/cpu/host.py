"""The host CPU as LLVM sees it: llvmlite's binding with the native target initialized, and the
host's identity. Both are made on first use, never at import."""

from __future__ import annotations

import functools
from typing import Any

import llvmlite.binding as binding

from ..target import Identity

#: LLVM's options for every module. A kernel with 32-bit indices computes them from its 64-bit
#: loop counters truncated, so the loop vectorizer checks one no-wrap assumption per access at
#: run time (once, before the loop); past 16 (its default) it gave up: a complex FIR filter of 8
#: taps or more ran scalar. The checks are exact, so more of them cost only their test.
LLVM_OPTIONS = ("-vectorize-scev-check-threshold=256",)


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
    """This process's CPU: LLVM's triple, CPU name and features."""
    llvm_ = llvm()
    return Identity("cpu", llvm_.get_process_triple(), llvm_.get_host_cpu_name(),
                    llvm_.get_host_cpu_features().flatten())
