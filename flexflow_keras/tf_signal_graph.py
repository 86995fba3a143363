"""TensorFlow's complex numbers and Fourier transforms on a model's symbolic tensors, for `python -m
flexflow_keras` (tf_signal.py sends its symbolic calls here): keras.io's FNet computes
``tf.math.real(tf.signal.fft2d(tf.cast(x, tf.complex64)))`` inside a layer's call().

A complex graph value is a `SymbolicComplex`: a (real, imag) pair of float KerasTensors, as Keras 3's
``keras.ops.fft`` / ``fft2`` / ``ifft2`` take and return them (composed from differentiable ops, so the
model trains through them). A complex KerasTensor made by ``tf.cast(real_tensor, tf.complex64)`` reads as
(the real tensor, zeros); ``tf.complex(re, im)`` of KerasTensors pairs them. ``tf.signal.fft`` /
``fft2d`` / ``ifft2d`` transform the innermost 1 or 2 dims (TensorFlow's and Keras' axes agree), and
``tf.math.real`` / ``imag`` / ``tf.abs`` read the pair. complex64 gives float32 parts and complex128
float64, as TensorFlow's kernels. Other transforms and other uses of a complex graph value are errors
that name the call.
"""

from __future__ import annotations

from dataclasses import dataclass

from flexflow_keras.errors import ArgumentError
from flexflow_keras.ops.graph import KerasTensor

_PART = {"complex64": "float32", "complex128": "float64"}


@dataclass(frozen=True)
class SymbolicComplex:
    """A complex graph value as its (real, imag) float KerasTensors."""

    re: KerasTensor
    im: KerasTensor

    @property
    def dtype(self) -> str:
        return "complex128" if self.re.dtype == "float64" else "complex64"

    @property
    def shape(self):
        return self.re.shape

    @property
    def ndim(self) -> int:
        return len(self.re.shape)

    @property
    def name(self) -> str:
        return f"complex({self.re.name}, {self.im.name})"


def is_symbolic(x) -> bool:
    return isinstance(x, (KerasTensor, SymbolicComplex))


def parts(x, who: str) -> SymbolicComplex:
    """`x` as a SymbolicComplex: itself, or a complex KerasTensor cast from a real one."""
    from flexflow_keras import ops

    if isinstance(x, SymbolicComplex):
        return x
    if isinstance(x, KerasTensor) and str(x.dtype) in _PART:
        op = getattr(x.node, "op", None)
        if getattr(op, "type_name", "") == "cast" and str(x.node.inputs[0].dtype) not in _PART:
            re = ops.cast(x.node.inputs[0], _PART[str(x.dtype)])
            return SymbolicComplex(re, ops.multiply(re, 0.0))  # zeros of re's shape (zeros_like wants static dims)
        raise ArgumentError(f"tf.{who} of the complex graph tensor {x.name!r}: flexflow_keras builds complex values "
                            f"inside a model from tf.cast(real, tf.complex64) or tf.complex(re, im) only.")
    raise ArgumentError(f"tf.{who} expects a complex tensor (complex64 or complex128), received the "
                        f"{getattr(x, 'dtype', type(x).__name__)} graph tensor {getattr(x, 'name', x)!r}; make one "
                        f"with tf.cast(x, tf.complex64) or tf.complex(x, tf.zeros_like(x)).")


def complex_(real, imag) -> SymbolicComplex:
    from flexflow_keras import ops

    if str(real.dtype) != str(imag.dtype) or str(real.dtype) not in ("float32", "float64"):
        raise ArgumentError(f"tf.complex expects real and imag of one float dtype (float32 or float64), received "
                            f"{real.dtype} and {imag.dtype}; cast them first.")
    return SymbolicComplex(ops.convert_to_tensor(real), ops.convert_to_tensor(imag))


def transform(x, rank: int, inverse: bool, who: str) -> SymbolicComplex:
    """tf.signal.fft (rank 1), fft2d / ifft2d (rank 2) of a symbolic complex value."""
    from flexflow_keras import ops

    z = parts(x, f"signal.{who}")
    fn = {(1, False): ops.fft, (2, False): ops.fft2, (2, True): ops.ifft2}.get((rank, inverse))
    if fn is None:
        raise ArgumentError(f"tf.signal.{who} of a model's symbolic tensor is not supported (Keras 3 has fft, fft2 "
                            f"and ifft2): compute it in the input pipeline, on arrays.")
    if z.ndim < rank:
        raise ArgumentError(f"tf.signal.{who} transforms the innermost {rank} dim(s); received shape {z.shape}.")
    open_dims = [z.ndim - rank + i for i, d in enumerate(tuple(z.shape)[-rank:]) if d is None]
    if open_dims:
        raise ArgumentError(
            f"tf.signal.{who} of the model's symbolic tensor {z.re.name!r} of shape {tuple(z.shape)}: flexflow_keras "
            f"builds a Fourier transform inside a model from the sizes of the dims it transforms, so they must be "
            f"known when the model is built; dim(s) {open_dims} are None (an Input(shape=(None, ...)) of "
            f"variable-length sequences?). Give that Input a fixed length, e.g. keras.Input(shape=(MAX_LENGTH,)), "
            f"or compute the transform in the input pipeline (a Dataset.map, on arrays).")
    re, im = fn((z.re, z.im))
    return SymbolicComplex(re, im)


def cast(z: SymbolicComplex, dtype: str):
    """`tf.cast` of a complex graph value: to complex64 / complex128 the pair in that precision, to a real
    dtype its real part (TensorFlow's cast drops the imaginary part)."""
    from flexflow_keras import ops

    if dtype in _PART:
        return SymbolicComplex(ops.cast(z.re, _PART[dtype]), ops.cast(z.im, _PART[dtype]))
    return ops.cast(z.re, dtype)


def real(x):
    return parts(x, "math.real").re if isinstance(x, SymbolicComplex) or str(x.dtype) in _PART else x


def imag(x):
    from flexflow_keras import ops

    if isinstance(x, SymbolicComplex) or str(x.dtype) in _PART:
        return parts(x, "math.imag").im
    return ops.multiply(x, 0.0)


def magnitude(x):
    from flexflow_keras import ops

    z = parts(x, "abs")
    return ops.sqrt(ops.add(ops.square(z.re), ops.square(z.im)))
