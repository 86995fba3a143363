"""User code reads a symbolic tensor's shape TensorFlow's way (ops/shape_tuple.py): keras.io's Swin
Transformer calls ``x.get_shape().as_list()`` in a layer's call and ``mask.get_shape()[0]`` on a
tf.Variable; scripts write ``x.shape.as_list()``, ``x.shape.rank`` and ``tf.TensorShape([None, 3])``.
Under Keras 3 on TensorFlow a layer's call sees TensorFlow tensors, whose shapes have these methods; ours
were plain tuples (AttributeError: 'tuple' object has no attribute 'as_list')."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flexflow_keras


def _reads(lib):
    seen = {}

    class Probe(lib.layers.Layer):
        def call(self, x):
            s = x.shape
            seen.update(as_list=s.as_list(), get=x.get_shape().as_list(), rank=s.rank, tail=s[1:].as_list(),
                        n=s[1:].num_elements(), full=s.is_fully_defined(), eq=s == (None, 3, 4), last=s[-1])
            return x

    Probe()(lib.Input((3, 4)))
    return seen


def test_symbolic_shapes_read_as_tensorflow_shapes():
    seen = _reads(flexflow_keras)
    assert seen == {"as_list": [None, 3, 4], "get": [None, 3, 4], "rank": 3, "tail": [3, 4], "n": 12,
                    "full": False, "eq": True, "last": 4}
    v = flexflow_keras.Variable(np.zeros((5, 2), "float32"))
    assert v.get_shape()[0] == 5 and v.get_shape().as_list() == [5, 2]
    e = flexflow_keras.ops.convert_to_tensor(np.zeros((2, 3), "float32"))
    assert e.get_shape().as_list() == [2, 3]


def test_as_tf_keras():
    pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    assert _reads(flexflow_keras) == _reads(keras)


def test_tensor_shape_under_the_runner(tmp_path):
    script = tmp_path / "shapes.py"
    script.write_text(textwrap.dedent("""
        import tensorflow as tf
        s = tf.TensorShape([None, 3])
        print(s.as_list(), s.rank, tf.TensorShape(s).as_list())
    """))
    out = subprocess.run([sys.executable, "-m", "flexflow_keras", str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "[None, 3] 2 [None, 3]" in out.stdout
