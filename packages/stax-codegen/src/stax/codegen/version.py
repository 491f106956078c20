"""The code generator's version: part of every artifact and of every disk-cache key, so a change
to the code it makes is never mixed with entries of an older one. Its own module, so the JIT reads
it without importing the pipeline."""

CODEGEN_VERSION = "0.1.0"
