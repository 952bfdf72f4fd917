"""A software prefetch for jitted loops that read the rows of a matrix in an order known ahead.

The evaluation scan (:func:`perceptron_lab.model.scoring.score_block_t`) reads one row of a kernel block
per update, in the training order of the updates, which is a random order of the rows. Each row
then comes from memory at its full latency, one after the other. Asking for the rows a few
updates ahead lets those reads overlap, together with blocks narrow enough that a block's rows
stay close (:func:`perceptron_lab.model.predict.block_points`). A prefetch changes no value; it only
moves data into the cache earlier. The measurement behind it is in ``benchmarks/NOTES.md``.
"""

from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

#: The name of LLVM's prefetch intrinsic for a pointer to bytes: opaque pointers (LLVM 15 and
#: later) mangle it as ``p0``, typed pointers as ``p0i8``.
_PREFETCH = "llvm.prefetch.p0" if llvm.llvm_version_info[0] >= 15 else "llvm.prefetch.p0i8"


@intrinsic
def prefetch_item(typingctx, arr, i, j):
    """Ask for the cache line holding ``arr[i, j]`` (a 2-d array) to be read into every cache
    level. No bounds check: the caller passes valid indices."""
    if not (isinstance(arr, types.Array) and arr.ndim == 2
            and isinstance(i, types.Integer) and isinstance(j, types.Integer)):
        return None
    sig = types.void(arr, i, j)

    def codegen(context, builder, signature, args):
        aryty, ity, jty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = [context.cast(builder, args[1], ity, types.intp), context.cast(builder, args[2], jty, types.intp)]
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, idx)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            _PREFETCH)
        # read (0), keep in every cache level (locality 3), data cache (1)
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen
