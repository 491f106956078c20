"""The CUDA backend: the scheduled kernel plan emitted as Triton source (spec §9).

The same plan as the CPU's (fusion, loop nests, storage: ``program_plan.py``) becomes one Triton
module: ``target.py`` the ``Target`` (device ``cuda``), ``emit.py`` the kernel scaffolding (block
indices, masks, phases, persistent and looped reductions), ``expressions.py`` one handler per
loop-IR expression kind, ``registry.py`` the operator tables filled by ``arithmetic.py``,
``functions.py`` and ``bits.py`` (imported by ``rules.py``), ``reductions.py`` the reduction
kinds, ``launch.py`` block sizes and grids, ``generate.py`` the artifact, ``executable.py`` the
runner (Triton and torch, imported only when one is made), ``verify.py`` the form Triton source
must have to be loaded (a document's source is Python text: nothing else of it runs).

Importing this package imports neither Triton nor torch: generating source needs neither.
"""
