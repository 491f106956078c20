"""The host CPU as LLVM sees it: llvmlite's binding with the native target initialized, and the
host's identity. Both are made on first use, never at import."""

from __future__ import annotations

import functools
from typing import Any

import llvmlite.binding as binding

from ..target import Identity


@functools.cache
def llvm() -> Any:
    """llvmlite's binding, with the host target initialized (once)."""
    binding.initialize_native_target()
    binding.initialize_native_asmprinter()
    return binding


@functools.cache
def host_identity() -> Identity:
    """This process's CPU: LLVM's triple, CPU name and features."""
    llvm_ = llvm()
    return Identity("cpu", llvm_.get_process_triple(), llvm_.get_host_cpu_name(),
                    llvm_.get_host_cpu_features().flatten())
