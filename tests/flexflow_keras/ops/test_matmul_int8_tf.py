"""ops.matmul of two int8 tensors accumulates and returns int32, as tf.keras 3.15 (Matmul's output spec:
int8 with int8 gives int32); ours returned int8 and wrapped around (Deep Learning with Python 3rd ed. ch. 18's
abs-max quantization: 19529 came out as -73). Other dtype pairs keep Keras' result_type."""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf

A8 = np.array([[100, -128], [127, 5]], "int8")
B8 = np.array([[120, 1], [-100, 127]], "int8")


@pytest.mark.parametrize("a,b", [(A8, B8), (A8, B8.astype("int32")), (A8.astype("int16"), B8),
                                 (A8.astype("float32"), B8)], ids=["i8i8", "i8i32", "i16i8", "f32i8"])
def test_eager_matmul_dtype_and_values(a, b):
    want = keras_ref.ops.convert_to_numpy(keras_ref.ops.matmul(a, b))
    got = np.asarray(ff.ops.matmul(a, b))
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got, want)


def test_symbolic_int8_matmul_in_a_model():
    outs = []
    for mod in (ff, keras_ref):
        x = mod.Input((2,), dtype="int8")
        y = mod.ops.matmul(x, B8)
        assert str(y.dtype) == "int32"
        outs.append(mod.Model(x, y).predict(A8, verbose=0))
    np.testing.assert_array_equal(outs[0], outs[1])


def test_quantization_cells_of_the_notebook():
    def run(mod):
        ops = mod.ops
        x = ops.array([[0.1, 0.9], [1.2, -0.8]])
        kernel = ops.array([[-0.1, -2.2], [1.1, 0.7]])

        def quantize(value):
            scale = ops.divide(127, ops.max(ops.abs(value), keepdims=True) + 1e-7)
            return ops.cast(ops.clip(ops.round(value * scale), -127, 127), dtype="int8"), scale

        int_x, x_scale = quantize(x)
        int_kernel, kernel_scale = quantize(kernel)
        return ops.convert_to_numpy(ops.cast(ops.matmul(int_x, int_kernel), "float32") / (x_scale * kernel_scale))

    np.testing.assert_allclose(run(ff), run(keras_ref), rtol=1e-6)
