"""Numba functions reading and writing the calling thread's x86 MXCSR register (`runtime.fpenv` uses
them; imported on first use, so `import runtime` does not load Numba)."""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic


def _call(builder, name, slot):
    bytes_ptr = ir.IntType(8).as_pointer()
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [bytes_ptr]), name)
    builder.call(fn, [builder.bitcast(slot, bytes_ptr)])


@intrinsic
def _get(typingctx):
    def codegen(context, builder, signature, args):
        slot = cgutils.alloca_once(builder, ir.IntType(32))
        _call(builder, "llvm.x86.sse.stmxcsr", slot)
        return builder.zext(builder.load(slot), ir.IntType(64))

    return types.int64(), codegen


@intrinsic
def _set(typingctx, value):
    def codegen(context, builder, signature, args):
        slot = cgutils.alloca_once(builder, ir.IntType(32))
        builder.store(builder.trunc(args[0], ir.IntType(32)), slot)
        _call(builder, "llvm.x86.sse.ldmxcsr", slot)
        return context.get_dummy_value()

    return types.void(types.int64), codegen


@njit(cache=True, nogil=True)
def get_word():
    """The calling thread's MXCSR."""
    return _get()


@njit(cache=True, nogil=True)
def set_word(value):
    """Load `value` into the calling thread's MXCSR."""
    _set(value)
