"""Direct launches (kernels/gpu/direct.py) without a GPU: the parameters they pass are the ones numba-cuda's
own `_Kernel._prepare_args` builds, the first launch of a signature goes through numba and the next ones
do not, and every launch numba's path must keep (host arrays, unknown types, specialised or debug
kernels, the simulator) keeps it. On a GPU, `benchmarks/gpu_check.py` runs every kernel test with direct
launches on."""

from __future__ import annotations

import ctypes
import types as pytypes

import numpy as np
import pytest

from kernels.gpu import direct


class _Mem:
    def __init__(self, ptr):
        self.device_ctypes_pointer = ctypes.c_void_p(ptr)


def _devarray(shape, strides, dtype=np.float32, ptr=0x7000):
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    return DeviceNDArray(shape, strides, dtype, gpu_data=_Mem(ptr))


def _numba_kernel(argtypes):
    from numba.cuda.dispatcher import _Kernel

    k = object.__new__(_Kernel)
    k.extensions = []
    k.signature = pytypes.SimpleNamespace(args=tuple(argtypes))
    k.launch_config_sensitive = False
    k.debug = False
    k.cooperative = False
    k._codelibrary = pytypes.SimpleNamespace(get_cufunc=lambda: pytypes.SimpleNamespace(kernel="cufunc"))
    return k


def _numba_args(overload, args):
    out = []
    for ty, v in zip(overload.argument_types, args, strict=True):
        overload._prepare_args(ty, v, 0, [], out)
    return out


def _plain(values):
    return [(type(v).__name__, v.value) if isinstance(v, ctypes._SimpleCData) else v for v in values]


def _args():
    return [_devarray((4, 5), (20, 4)),            # C
            _devarray((4, 5), (4, 16), ptr=0x9000),  # F
            _devarray((3, 2), (40, 8), np.float64, ptr=0xA000),  # A (strided)
            7, np.int32(-3), np.float32(2.5), 1.25, True, np.uint64(9)]


def test_the_parameters_are_numba_cudas_own():
    from numba.cuda.typing.typeof import Purpose, typeof

    args = _args()
    overload = _numba_kernel(tuple(typeof(a, Purpose.argument) for a in args))
    packers = direct.packers_for(overload)
    assert packers is not None
    ours = direct.kernel_args(packers, args)
    assert _plain(ours) == _plain(_numba_args(overload, args))
    again = direct.kernel_args(packers, args)  # the arrays' parameters come from their cache
    assert _plain(again) == _plain(ours)


def test_the_key_is_the_argument_types_numba_types_them_by():
    from numba.cuda.typing.typeof import Purpose, typeof

    args = _args()
    key = direct._arg_key(args)
    assert key[:3] == tuple(a._numba_type_ for a in args[:3])
    assert [str(k) for k in key[:3]] == ["array(float32, 2d, C)", "array(float32, 2d, F)", "array(float64, 2d, A)"]
    # a scalar's Python type decides its numba type
    for a, k in zip(args[3:], key[3:], strict=True):
        assert k is type(a) and typeof(a, Purpose.argument) == typeof(k(a), Purpose.argument)


@pytest.mark.parametrize("bad", [np.zeros(3, np.float32), (1, 2), "x", None])
def test_an_argument_numba_must_handle_keeps_numbas_path(bad):
    assert direct._arg_key([_devarray((4,), (4,)), bad]) is None


def test_a_type_it_does_not_mirror_keeps_numbas_path():
    from numba.cuda import types

    assert direct.packers_for(_numba_kernel((types.complex64,))) is None
    assert direct.packers_for(_numba_kernel((types.UniTuple(types.int64, 2),))) is None


class _Dispatcher:
    """The parts of a numba CUDADispatcher that `remember` reads."""

    def __init__(self, overload, **options):
        from numba.cuda.typing.typeof import Purpose, typeof

        self.overloads = {overload.argument_types: overload}
        self.targetoptions = options
        self.specialized = False
        self._launch_config_sensitive = False
        self.typeof_pyval = lambda v: typeof(v, Purpose.argument)
        self.numba_launches = 0

    def __getitem__(self, config):
        def run(*args):
            self.numba_launches += 1
        return run


@pytest.fixture
def direct_on(monkeypatch):
    launched = []
    monkeypatch.setitem(direct._state, "on", True)
    monkeypatch.setattr(direct, "_entries", {})
    monkeypatch.setattr(direct, "_stream_key", lambda stream: (("ctx", 1), "core-stream"))
    import cuda.core

    monkeypatch.setattr(cuda.core, "launch", lambda *a: launched.append(a), raising=False)
    return launched


def test_first_launch_through_numba_then_direct(direct_on):
    from numba.cuda.typing.typeof import Purpose, typeof

    from kernels.gpu.launch import launch_grid

    args = _args()
    overload = _numba_kernel(tuple(typeof(a, Purpose.argument) for a in args))
    kernel = _Dispatcher(overload)
    launch_grid(kernel, 3, 256, *args)
    assert kernel.numba_launches == 1 and direct_on == []
    launch_grid(kernel, 3, 256, *args)
    launch_grid(kernel, (2, 2), (16, 16), *args)
    assert kernel.numba_launches == 1 and len(direct_on) == 2
    stream, config, cufunc, *params = direct_on[0]
    assert (stream, cufunc) == ("core-stream", "cufunc")
    assert (config.grid, config.block) == ((3, 1, 1), (256, 1, 1))
    assert direct_on[1][1].grid == (2, 2, 1) and direct_on[1][1].block == (16, 16, 1)
    assert _plain(params) == _plain(_numba_args(overload, args))
    # new argument types: numba's path again, once
    other = [_devarray((8,), (4,))]
    kernel.overloads[(other[0]._numba_type_,)] = _numba_kernel((other[0]._numba_type_,))
    launch_grid(kernel, 1, 32, *other)
    launch_grid(kernel, 1, 32, *other)
    assert kernel.numba_launches == 2 and len(direct_on) == 3


@pytest.mark.parametrize("why", ["specialized", "extensions", "debug", "config_sensitive"])
def test_kernels_numba_must_launch_stay_on_its_path(direct_on, why):
    from numba.cuda.typing.typeof import Purpose, typeof

    from kernels.gpu.launch import launch_grid

    args = _args()[:2]
    overload = _numba_kernel(tuple(typeof(a, Purpose.argument) for a in args))
    kernel = _Dispatcher(overload, **({"extensions": [object()]} if why == "extensions" else {}))
    if why == "specialized":
        kernel.specialized = True
    elif why == "debug":
        overload.debug = True
    elif why == "config_sensitive":
        overload.launch_config_sensitive = True
    for _ in range(3):
        launch_grid(kernel, 1, 32, *args)
    assert kernel.numba_launches == 3 and direct_on == []


def test_off_under_the_simulator_and_by_flag(monkeypatch):
    from numba import config

    monkeypatch.setitem(direct._state, "on", None)
    monkeypatch.setattr(config, "ENABLE_CUDASIM", 1, raising=False)
    assert direct.enabled() is False
    monkeypatch.setitem(direct._state, "on", None)
    monkeypatch.setattr(config, "ENABLE_CUDASIM", 0, raising=False)
    monkeypatch.setenv("FF_DIRECT_LAUNCH", "0")
    assert direct.enabled() is False
    monkeypatch.setitem(direct._state, "on", None)
    monkeypatch.setenv("FF_DIRECT_LAUNCH", "1")
    assert direct.enabled() is True
    monkeypatch.setitem(direct._state, "on", None)


def test_an_int_outside_int64_keeps_numbas_path():
    """numba types 2**63 and above as uint64: one key for every int would reuse the int64 overload."""
    arr = _devarray((4,), (4,))
    assert direct._arg_key([arr, 2**63 - 1]) is not None
    assert direct._arg_key([arr, 2**63 + 5]) is None
    assert direct._arg_key([arr, -2**63 - 1]) is None


def test_no_direct_launch_on_the_default_stream_without_a_context(monkeypatch):
    monkeypatch.setattr(direct, "_context", lambda: 0)
    assert direct.try_launch(object(), 1, 32, None, [_devarray((4,), (4,))]) is None


def test_values_derived_from_a_device_array_are_made_once_and_kept_on_it():
    from kernels.gpu import flat, per_array, reshaped

    a = _devarray((4, 5), (20, 4))
    made = []
    assert per_array(a, "k", lambda: made.append(1) or "v") == "v"
    assert per_array(a, "k", lambda: made.append(1) or "w") == "v" and made == [1]
    assert flat(a) is flat(a) and flat(a).shape == (20,)
    assert reshaped(a, 5, 4) is reshaped(a, 5, 4) and reshaped(a, 5, 4).shape == (5, 4)
    host = np.zeros((4, 5))  # no __dict__: made every time
    assert reshaped(host, 20) is not reshaped(host, 20)
    assert per_array(host, "k", lambda: made.append(2) or "x") == "x" and made == [1, 2]
