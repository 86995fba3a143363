"""Compile a CPU scalar function (activations, ...) as a CUDA device function that keeps float32 float32.

Numba types a Python float literal (``0.5``) and a module-level float constant as float64, so
``0.5 * x`` with a float32 ``x`` is computed in f64 on the device (and converted back at the store).
`float32_constants(fn)` recompiles `fn`'s own source with each float literal and float global wrapped in
``float32(...)`` (`device_function(fn)` makes that a device function): float32 data then stays in float32 instructions, and float64 data still computes in
float64 (float32 * float64 promotes). The CPU keeps the unmodified function, so both share one formula.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types

_CAST = "_ff_float32_constant"


class _Float32Constants(ast.NodeTransformer):
    def __init__(self, float_globals: set[str]):
        self.float_globals = float_globals

    def _wrap(self, node):
        return ast.copy_location(ast.Call(func=ast.Name(_CAST, ast.Load()), args=[node], keywords=[]), node)

    def visit_Constant(self, node):
        return self._wrap(node) if type(node.value) is float else node

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.float_globals:
            return self._wrap(node)
        return node


def float32_constants(fn):
    """`fn` recompiled from its source with float32 constants: a plain Python function with the same
    name, module and globals (so later module definitions and the simulator's ``cuda`` swap still
    apply). Usable as a decorator under ``@cuda.jit``; `fn` must be a module-level function."""
    import numba

    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    floats = {k for k, v in fn.__globals__.items() if type(v) is float}
    tree = ast.fix_missing_locations(_Float32Constants(floats).visit(tree))
    tree.body[0].decorator_list = []
    module_code = compile(tree, inspect.getsourcefile(fn) or "<scalar source>", "exec")
    code = next(c for c in module_code.co_consts if isinstance(c, types.CodeType) and c.co_name == fn.__name__)
    fn.__globals__.setdefault(_CAST, numba.float32)
    out = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__)
    out.__qualname__ = fn.__qualname__
    return out


def device_function(fn):
    """`fn` as a CUDA device function with float32 constants (see the module docstring)."""
    from numba import cuda

    return cuda.jit(device=True)(float32_constants(fn))
