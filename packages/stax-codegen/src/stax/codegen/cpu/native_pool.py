"""A thread pool in machine code: parallel kernel launches without the interpreter.

The Python pool (``python_pool.py``) hands chunks to Python threads: waking one, giving it the GIL
and taking the GIL back costs about 40 us per launch, so only kernels of a millisecond or more
were worth splitting. Here the workers are native threads created once per process with
``pthread_create``; a launch is one ctypes call (the GIL released for its whole length) that
publishes the kernel and its arguments, bumps a generation counter the workers wait on (a short
spin, then a futex), runs chunks itself and waits for the last one. Chunks are claimed with an
atomic counter, several per thread, so uneven chunks balance.

Kernels keep their signature ``kernel(PyObject*..., start, stop)``; per arity a trampoline
``tramp_n(void **argv, start, stop)`` calls ``argv[0]`` with ``argv[1..n]``. Linux only (the
futex system call); elsewhere, or if the module cannot be built, the Python pool is used.

Fork: a child has none of the parent's threads, whatever they were doing. An at-fork handler
gives every pool a new lock and zeroes its globals in the child (a launch in flight at the fork
left them half way), and the child's first launch starts its own workers.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import threading
import weakref
from pathlib import Path
from typing import Any

from llvmlite import ir

from .jit import CompiledModule

I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
I8P = I8.as_pointer()
I8PP = I8P.as_pointer()
VOID = ir.VoidType()
MAX_ARITY = 16
CHUNKS_PER_THREAD = 4
CHUNK_MASK = 0xFFFF  # chunks per launch at most (16 bits of the claim word)
SPINS = 100000  # ~50-100 us: a loop of launches finds the workers awake; idle ones sleep soon
#: x86-64: a worker spins this many time-stamp-counter ticks (with ``pause``) before it sleeps,
#: about 0.5-1 ms at the 2-4 GHz such counters run at. A count of loop iterations lasted under
#: 40 us on an Intel Xeon VM: a kernel launched after 40 us of NumPy work (a NumPy step, a
#: ``mean`` computed by NumPy before the branch's kernel) woke a sleeping worker, and a VM's
#: wake-up (a halted virtual CPU) took longer than the kernel: 200k float32 ``sqrt(abs(x)) * 2``
#: 27 us back to back, 60-80 us after such a gap
SPIN_TICKS = 1 << 21
#: the launching thread, its own chunks done, spins this long for the others' (TSC ticks, about
#: 50-100 us; iterations elsewhere) before it sleeps
CALLER_SPIN_TICKS = 1 << 18
CALLER_SPINS = 20000
TIMED_SPIN = platform.machine() in ("x86_64", "AMD64")
SYS_FUTEX = {"x86_64": 202, "aarch64": 98}.get(platform.machine())
FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE = 128, 129


def _pool_ir() -> str:
    module = ir.Module("stax_pool")
    task_type = ir.FunctionType(VOID, [I8PP, I64, I64])

    def global_(name: str, typ: ir.Type) -> ir.GlobalVariable:
        g = ir.GlobalVariable(module, typ, name)
        g.initializer = ir.Constant(typ, None)
        return g

    task_fn = global_("task_fn", task_type.as_pointer())
    task_argv = global_("task_argv", I8PP)
    task_total = global_("task_total", I64)
    # the claim word: generation << 32 | chunks << 16 | next chunk; a chunk is claimed by a
    # compare-and-swap that checks the launch's generation, so a worker still looping from the
    # previous launch can never take a chunk of the next one (nor read its chunk count)
    claim = global_("claim", I64)
    done = global_("done", I64)
    generation = global_("generation", I32)
    finished = global_("finished", I32)  # the generation whose last chunk finished
    # set by ``rest()`` when NumPy runs next (a BLAS call on its own threads): workers sleep at
    # once instead of spinning, which on a machine of few cores stalled the library's threads
    # (a matmul after a pooled kernel took 2-3 ms more); the next launch clears it
    resting = global_("resting", I32)
    # how many workers sleep (or are about to) on ``generation``, and whether the launching
    # thread sleeps on ``finished``: a launch wakes only when someone sleeps. Each side stores
    # its own word and then loads the other's (both sequentially consistent), so a sleeper
    # either sees the new value or is seen and woken; the futex call itself returns at once if
    # the word moved. A wake system call per launch (two with the caller's) cost 2-10 us on a
    # VM, and a caller that slept as soon as its own chunks were done paid a context switch
    # besides: (500, 400) float64 centred in place ran 65 us serial, 110 us split
    sleepers = global_("sleepers", I32)
    waiting = global_("waiting", I32)
    # ``launch``'s: a launch holds ``busy`` (a machine-code entry launches holding the GIL, a
    # dispatched call without it: they may meet); ``started`` once this process has workers
    busy = global_("busy", I32)
    started = global_("started", I32)
    syscall = ir.Function(module, ir.FunctionType(I64, [I64], var_arg=True), "syscall")
    pthread_create = ir.Function(module, ir.FunctionType(
        I32, [I8P, I8P, ir.FunctionType(I8P, [I8P]).as_pointer(), I8P]), "pthread_create")

    def futex(b: ir.IRBuilder, word: ir.Value, op: int, value: ir.Value) -> None:
        b.call(syscall, [ir.Constant(I64, SYS_FUTEX), b.bitcast(word, I8P), ir.Constant(I32, op),
                         value, ir.Constant(I8P, None), ir.Constant(I8P, None),
                         ir.Constant(I32, 0)])

    def load(b: ir.IRBuilder, ptr: ir.Value, typ: ir.Type) -> ir.Value:
        return b.load_atomic(ptr, "seq_cst", typ.width // 8 if isinstance(typ, ir.IntType) else 8)

    if TIMED_SPIN:
        clock = module.declare_intrinsic("llvm.readcyclecounter", (), ir.FunctionType(I64, []))
        pause = module.declare_intrinsic("llvm.x86.sse2.pause", (), ir.FunctionType(VOID, []))

    def spin_start(b: ir.IRBuilder, slot: ir.Value) -> None:
        """Start a bounded spin: the time-stamp counter's ticks (x86-64), else a count."""
        b.store(b.call(clock, []) if TIMED_SPIN else ir.Constant(I64, 0), slot)

    def still_spinning(b: ir.IRBuilder, slot: ir.Value, ticks: int, spins: int) -> ir.Value:
        """One more turn of the spin ``slot`` started (a ``pause``): whether it is within its
        ``ticks`` (else ``spins`` turns)."""
        if TIMED_SPIN:
            b.call(pause, [])
            return b.icmp_unsigned("<", b.sub(b.call(clock, []), b.load(slot)),
                                   ir.Constant(I64, ticks))
        count = b.add(b.load(slot), ir.Constant(I64, 1))
        b.store(count, slot)
        return b.icmp_signed("<", count, ir.Constant(I64, spins))

    mask = ir.Constant(I64, CHUNK_MASK)
    # run_chunks(gen): claim chunks of launch ``gen`` until none is left; the last one to
    # finish records the generation in ``finished`` and wakes the caller
    run = ir.Function(module, ir.FunctionType(VOID, [I32]), "run_chunks")
    gen = run.args[0]
    b = ir.IRBuilder(run.append_basic_block("entry"))
    loop, check, take, work, out = (run.append_basic_block(n)
                                    for n in ("loop", "check", "take", "work", "out"))
    b.branch(loop)
    b.position_at_end(loop)
    word = load(b, claim, I64)
    same = b.icmp_unsigned("==", b.trunc(b.lshr(word, ir.Constant(I64, 32)), I32), gen)
    b.cbranch(same, check, out)
    b.position_at_end(check)
    chunk = b.and_(word, mask)
    chunks = b.and_(b.lshr(word, ir.Constant(I64, 16)), mask)
    b.cbranch(b.icmp_unsigned("<", chunk, chunks), take, out)
    b.position_at_end(take)
    swapped = b.cmpxchg(claim, word, b.add(word, ir.Constant(I64, 1)), "seq_cst", "seq_cst")
    b.cbranch(b.extract_value(swapped, 1), work, loop)
    b.position_at_end(work)  # this launch's task cannot change until its last chunk is done
    total = b.load(task_total)
    start = b.sdiv(b.mul(total, chunk), chunks)
    stop = b.sdiv(b.mul(total, b.add(chunk, ir.Constant(I64, 1))), chunks)
    b.call(b.load(task_fn), [b.load(task_argv), start, stop])
    finished_before = b.atomic_rmw("add", done, ir.Constant(I64, 1), "seq_cst")
    last = b.icmp_signed("==", b.add(finished_before, ir.Constant(I64, 1)), chunks)
    wake = run.append_basic_block("wake")
    b.cbranch(last, wake, loop)
    b.position_at_end(wake)
    b.store_atomic(gen, finished, "seq_cst", 4)
    wake_caller = run.append_basic_block("wake_caller")
    b.cbranch(b.icmp_unsigned("!=", load(b, waiting, I32), ir.Constant(I32, 0)), wake_caller,
              loop)
    b.position_at_end(wake_caller)
    futex(b, finished, FUTEX_WAKE_PRIVATE, ir.Constant(I32, 1))
    b.branch(loop)
    b.position_at_end(out)
    b.ret_void()

    # worker: wait for a new generation (spin, then sleep on the futex), run chunks, repeat
    worker = ir.Function(module, ir.FunctionType(I8P, [I8P]), "worker")
    b = ir.IRBuilder(worker.append_basic_block("entry"))
    seen = b.alloca(I32)
    spins = b.alloca(I64)
    b.store(load(b, generation, I32), seen)
    wait, spin, sleep, go = (worker.append_basic_block(n) for n in ("wait", "spin", "sleep", "go"))
    b.branch(wait)
    b.position_at_end(wait)
    spin_start(b, spins)
    b.branch(spin)
    b.position_at_end(spin)
    current = load(b, generation, I32)
    changed = b.icmp_unsigned("!=", current, b.load(seen))
    again = worker.append_basic_block("again")
    b.cbranch(changed, go, again)
    b.position_at_end(again)
    spinning = still_spinning(b, spins, SPIN_TICKS, SPINS)
    awake = b.icmp_unsigned("==", load(b, resting, I32), ir.Constant(I32, 0))
    b.cbranch(b.and_(spinning, awake), spin, sleep)
    b.position_at_end(sleep)
    b.atomic_rmw("add", sleepers, ir.Constant(I32, 1), "seq_cst")
    asleep, awoken = worker.append_basic_block("asleep"), worker.append_basic_block("awoken")
    b.cbranch(b.icmp_unsigned("==", load(b, generation, I32), b.load(seen)), asleep, awoken)
    b.position_at_end(asleep)
    futex(b, generation, FUTEX_WAIT_PRIVATE, b.load(seen))  # returns at once if it moved on
    b.branch(awoken)
    b.position_at_end(awoken)
    b.atomic_rmw("sub", sleepers, ir.Constant(I32, 1), "seq_cst")
    b.branch(wait)
    b.position_at_end(go)
    b.store(current, seen)
    b.call(run, [current])
    b.branch(wait)

    # parallel_for: publish the task, then the claim word, then the generation (a worker that
    # sees the new generation finds its chunks); wake, work, wait for the last chunk
    pfor = ir.Function(module, ir.FunctionType(VOID, [task_type.as_pointer(), I8PP, I64, I64]),
                       "parallel_for")
    fn, argv, total_arg, chunks_arg = pfor.args
    b = ir.IRBuilder(pfor.append_basic_block("entry"))
    b.store_atomic(ir.Constant(I32, 0), resting, "seq_cst", 4)
    b.store(fn, task_fn)
    b.store(argv, task_argv)
    b.store(total_arg, task_total)
    b.store_atomic(ir.Constant(I64, 0), done, "seq_cst", 8)
    new_gen = b.add(load(b, generation, I32), ir.Constant(I32, 1))  # launches take turns
    b.store_atomic(b.or_(b.shl(b.zext(new_gen, I64), ir.Constant(I64, 32)),
                         b.shl(chunks_arg, ir.Constant(I64, 16))), claim, "seq_cst", 8)
    b.store_atomic(new_gen, generation, "seq_cst", 4)
    wake_workers, run_own = pfor.append_basic_block("wake"), pfor.append_basic_block("run")
    b.cbranch(b.icmp_unsigned("!=", load(b, sleepers, I32), ir.Constant(I32, 0)), wake_workers,
              run_own)
    b.position_at_end(wake_workers)
    futex(b, generation, FUTEX_WAKE_PRIVATE, ir.Constant(I32, 2 ** 31 - 1))
    b.branch(run_own)
    b.position_at_end(run_own)
    b.call(run, [new_gen])
    # the last chunks are other threads': spin for them a while (they run as long as ours
    # did), then sleep until the last one's ``finished``
    waited = b.alloca(I64)
    spin_start(b, waited)
    check, spin_done, sleep_done, out = (pfor.append_basic_block(n)
                                         for n in ("check", "spin", "sleep", "out"))
    b.branch(check)
    b.position_at_end(check)
    all_done = b.icmp_signed("==", load(b, done, I64), chunks_arg)
    b.cbranch(all_done, out, spin_done)
    b.position_at_end(spin_done)
    b.cbranch(still_spinning(b, waited, CALLER_SPIN_TICKS, CALLER_SPINS), check, sleep_done)
    b.position_at_end(sleep_done)
    # sleep unless ``finished`` moved since ``done`` was read (then look again)
    b.store_atomic(ir.Constant(I32, 1), waiting, "seq_cst", 4)
    seen_finished = load(b, finished, I32)
    recheck, woken = pfor.append_basic_block("recheck"), pfor.append_basic_block("woken")
    b.cbranch(b.icmp_unsigned("==", seen_finished, new_gen), woken, recheck)
    b.position_at_end(recheck)
    futex(b, finished, FUTEX_WAIT_PRIVATE, seen_finished)  # at once if it moved meanwhile
    b.branch(woken)
    b.position_at_end(woken)
    b.store_atomic(ir.Constant(I32, 0), waiting, "seq_cst", 4)
    b.branch(check)
    b.position_at_end(out)
    b.ret_void()

    # rest(): idle workers sleep now rather than spin (see ``resting``)
    rest = ir.Function(module, ir.FunctionType(VOID, []), "rest")
    b = ir.IRBuilder(rest.append_basic_block("entry"))
    b.store_atomic(ir.Constant(I32, 1), resting, "seq_cst", 4)
    b.ret_void()

    # start_workers(n): n native threads running worker()
    start = ir.Function(module, ir.FunctionType(I32, [I32]), "start_workers")
    b = ir.IRBuilder(start.append_basic_block("entry"))
    handle = b.alloca(I64)
    index = b.alloca(I32)
    b.store(ir.Constant(I32, 0), index)
    head, body, out = (start.append_basic_block(n) for n in ("head", "body", "out"))
    b.branch(head)
    b.position_at_end(head)
    i = b.load(index)
    b.cbranch(b.icmp_signed("<", i, start.args[0]), body, out)
    b.position_at_end(body)
    status = b.call(pthread_create, [b.bitcast(handle, I8P), ir.Constant(I8P, None), worker,
                                     ir.Constant(I8P, None)])
    failed = start.append_basic_block("failed")
    next_ = start.append_basic_block("next")
    b.cbranch(b.icmp_signed("!=", status, ir.Constant(I32, 0)), failed, next_)
    b.position_at_end(failed)
    b.ret(status)
    b.position_at_end(next_)
    b.store(b.add(i, ir.Constant(I32, 1)), index)
    b.branch(head)
    b.position_at_end(out)
    b.store_atomic(ir.Constant(I32, 1), started, "seq_cst", 4)
    b.ret(ir.Constant(I32, 0))

    # launch(fn, argv, total, chunks): parallel_for when this process has workers and no other
    # launch is in flight, else fn over the whole range on the calling thread (never a wait)
    launch = ir.Function(module, pfor.function_type, "launch")
    fn, argv, total_arg, chunks_arg = launch.args
    b = ir.IRBuilder(launch.append_basic_block("entry"))
    alone, pooled, inline = (launch.append_basic_block(n) for n in ("alone", "pooled", "inline"))
    ready = b.icmp_unsigned("!=", load(b, started, I32), ir.Constant(I32, 0))
    b.cbranch(ready, alone, inline)
    b.position_at_end(alone)
    taken = b.cmpxchg(busy, ir.Constant(I32, 0), ir.Constant(I32, 1), "seq_cst", "seq_cst")
    b.cbranch(b.extract_value(taken, 1), pooled, inline)
    b.position_at_end(pooled)
    b.call(pfor, [fn, argv, total_arg, chunks_arg])
    b.store_atomic(ir.Constant(I32, 0), busy, "seq_cst", 4)
    b.ret_void()
    b.position_at_end(inline)
    b.call(fn, [argv, ir.Constant(I64, 0), total_arg])
    b.ret_void()

    # tramp_n(argv, start, stop) = argv[0](argv[1], ..., argv[n], start, stop)
    for n in range(1, MAX_ARITY + 1):
        tramp = ir.Function(module, task_type, f"tramp_{n}")
        argv, lo, hi = tramp.args
        b = ir.IRBuilder(tramp.append_basic_block("entry"))
        kernel_type = ir.FunctionType(VOID, [I8P] * n + [I64, I64])
        target = b.bitcast(b.load(argv), kernel_type.as_pointer())
        values = [b.load(b.gep(argv, [ir.Constant(I64, k + 1)])) for k in range(n)]
        b.call(target, [*values, lo, hi])
        b.ret_void()
    return str(module)


def _source_key() -> str:
    """What the pool's machine code depends on: this module's text (its IR builder and
    constants) and the platform's futex number."""
    return f"stax-pool {SYS_FUTEX} " + hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


class NativePool:
    """``parallel_for(kernel_address, arrays, total)``: ``kernel(*arrays, start, stop)`` over
    ``[0, total)`` on ``size`` threads (the caller's included)."""

    def __init__(self, size: int, cache: Any = None) -> None:
        self.size = size
        # ~50 ms to build, then cached under a key of this file's text (no IR built warm)
        self._module = CompiledModule(_pool_ir, cache, speed_level=1, key=_source_key())
        task = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                ctypes.c_int64)
        #: ``launch(tramp, argv, total, chunks)``, also called by machine-code entries
        self.launch_address = self._module.address("launch")
        self._run = task(self.launch_address)
        self._tramps = [0] + [self._module.address(f"tramp_{n}") for n in range(1, MAX_ARITY + 1)]
        self._start = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32)(
            self._module.address("start_workers"))
        #: ``rest()``, also called by machine-code entries before a BLAS call
        self.rest_address = self._module.address("rest")
        self._rest = ctypes.CFUNCTYPE(None)(self.rest_address)
        self._state = [(self._module.global_address(name), width) for name, width in _STATE]
        self._lock = threading.Lock()
        self._pid = -1
        _POOLS.add(self)

    def _ensure_workers(self) -> None:
        if self._pid != os.getpid():  # first use, or a forked child: its own workers
            if self._start(self.size - 1) != 0:
                raise OSError("pthread_create failed")
            self._pid = os.getpid()

    def _after_fork_in_child(self) -> None:
        """The child has none of the parent's threads: a launch that was in flight there (its
        lock held, its task and counters half way) is gone. Start from a new lock and zeroed
        globals; the first launch starts the child's own workers."""
        self._lock = threading.Lock()
        self._pid = -1
        for address, width in self._state:
            ctypes.memset(address, 0, width)

    def parallel_for(self, kernel_address: int, arrays: tuple[Any, ...], total: int,
                     rest: bool = False) -> None:
        """``rest``: NumPy runs next (``straight_line.py``): the workers sleep as soon as
        this launch is done rather than spin for the next one."""
        n = len(arrays)
        argv = (ctypes.c_void_p * (n + 1))(kernel_address, *[id(a) for a in arrays])
        chunks = self.chunks(total)
        with self._lock:  # one launch at a time: the task lives in the module's globals
            self._ensure_workers()
            self._run(self._tramps[n], ctypes.addressof(argv), total, chunks)
            if rest:
                self._rest()


    def chunks(self, total: int) -> int:
        """How many chunks a launch over ``[0, total)`` is cut into."""
        return min(total, self.size * CHUNKS_PER_THREAD, CHUNK_MASK)

    def tramp(self, arity: int) -> int:
        """The address of ``tramp_<arity>``."""
        return self._tramps[arity]


# the module's globals, (name, bytes), zeroed in a forked child
_STATE = (("task_fn", 8), ("task_argv", 8), ("task_total", 8), ("claim", 8), ("done", 8),
          ("generation", 4), ("finished", 4), ("resting", 4), ("busy", 4), ("started", 4),
          ("sleepers", 4), ("waiting", 4))
_POOLS: weakref.WeakSet[NativePool] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for pool in list(_POOLS):
        pool._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

_NATIVE: NativePool | bool | None = None


def native_available() -> bool:
    """Whether launches can use the native pool here (Linux on x86-64 or arm64, and not
    ``STAX_THREADS=python``), without building it."""
    return SYS_FUTEX is not None and platform.system() == "Linux" and \
        os.environ.get("STAX_THREADS", "") != "python"


def native_pool(size: int, cache: Any = None) -> NativePool | None:
    """The process's native pool of ``size`` threads (its machine code from ``cache`` when there),
    or None where there is none (see ``native_available``; one core; the module failed to build,
    and then the Python pool runs every launch)."""
    global _NATIVE
    if _NATIVE is None:
        _NATIVE = False
        if native_available() and size > 1:
            try:
                _NATIVE = NativePool(size, cache)
            except Exception:  # any failure: the Python pool still works
                _NATIVE = False
    return _NATIVE or None
