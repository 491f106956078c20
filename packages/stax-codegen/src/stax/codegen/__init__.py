"""stax.codegen — scheduling, fusion and LLVM code generation for the CPU (spec §7–8)."""

from .artifact import KERNELS_SCHEMA, BufferPlan, KernelArtifact, KernelPlan, load_artifact
from .executable import Executable, ExternResultMismatch, FloatingPointEvents, InputMismatch
from .generate import CODEGEN_VERSION, CodegenOptions, generate
from .scheduler import FusionDecision, schedule

__version__ = "0.1.0"

__all__ = [
    "CODEGEN_VERSION", "KERNELS_SCHEMA", "BufferPlan", "CodegenOptions", "Executable",
    "ExternResultMismatch", "FloatingPointEvents", "FusionDecision", "InputMismatch",
    "KernelArtifact", "KernelPlan",
    "generate", "load_artifact", "schedule",
]
