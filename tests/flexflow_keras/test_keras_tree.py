"""`keras.tree` (flexflow_keras/tree.py) gives what Keras 3.15's gives for the same calls, and `tf.nest`'s
mapped functions under `python -m flexflow_keras` what TensorFlow 2.21's give."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import flexflow_keras
from flexflow_keras import tree

ROOT = Path(__file__).resolve().parents[2]

HEADER = """
import collections
import numpy as np
P = collections.namedtuple("P", "y x")
OD, DD, DQ = collections.OrderedDict, collections.defaultdict, collections.deque
"""

# each an expression over `t` (the tree module); a raised error compares by its type
CASES = [
    't.flatten({"b": 1, "a": [2, (3, None)]})',
    't.flatten({2: "b", 1: "a"})',
    't.flatten({2: "b", "a": "a"})',
    't.flatten(OD(b=1, a=2))',
    't.flatten(P(1, [2]))',
    't.flatten(DQ([1, [2]]))',
    't.flatten("abc")',
    't.flatten({1, 2})',
    't.flatten([])',
    't.flatten(None)',
    '[t.is_nested(v) for v in (1, [], (), {}, P(1, 2), "ab", None, {1}, DQ())]',
    't.map_structure(lambda v: v * 10, P(1, 2))',
    't.map_structure(lambda a, b: a + b, [1, (2, 3)], [10, (20, 30)])',
    't.map_structure(lambda v: v, {"b": 1, "a": 2})',
    't.map_structure(lambda v: v, OD(b=1, a=2))',
    't.map_structure(lambda a, b: (a, b), OD(b=1, a=2), {"a": 3, "b": 4})',
    't.map_structure(lambda a, b: (a, b), [None, 1], [2, 3])',
    't.map_structure(lambda v: v * 2, [None, 1], none_is_leaf=False)',
    't.map_structure(lambda a, b: a, [None, 1], [None, 2], none_is_leaf=False)',
    't.map_structure(lambda v: v, DQ([1, 2], maxlen=3))',
    't.map_structure(lambda a, b: a, [1, 2], (1, 2))',
    't.map_structure(lambda a, b: a, [1, 2], [1])',
    't.map_structure(lambda a, b: a, {"a": 1}, {"b": 1})',
    't.map_structure(lambda a, b: a, P(1, 2), (1, 2))',
    't.map_structure(lambda a, b: a, [None, 1], [[2], 3])',
    't.map_structure(lambda: 1)',
    't.pack_sequence_as({"b": 0, "a": [0, 0]}, [1, 2, 3])',
    't.pack_sequence_as(P(0, 0), [1, 2])',
    't.pack_sequence_as(DD(list, b=0, a=0), [1, 2])',
    't.pack_sequence_as(0, [5])',
    't.pack_sequence_as([0, 1], [5])',
    't.pack_sequence_as([0, 1], [5, 6, 7])',
    't.assert_same_structure([1, 2], ["a", np.zeros(3)])',
    't.assert_same_structure(OD(a=1), {"a": 1})',
    't.assert_same_structure([1, 2], (1, 2))',
    't.assert_same_structure({"a": 1}, {"b": 1})',
    't.assert_same_paths([1, 2], P(3, 4))',
    't.assert_same_paths({"a": 1}, {"b": 1})',
    't.flatten_with_path({"b": 1, "a": [2, {"x": (3, 4)}]})',
    't.flatten_with_path(P(1, [2]))',
    't.lists_to_tuples([1, [2, {"a": [3]}]])',
    't.lists_to_tuples(P([1], 2))',
    't.lists_to_tuples(DQ([1, [2]]))',
    't.map_structure_up_to([1, (2, 3)], lambda v: str(v), [[1], ([2], {"a": 3})])',
    't.map_structure_up_to({"a": 0, "b": 0}, lambda x, y: (x, y), {"a": [1], "b": 2}, {"a": 3, "b": [4]})',
    't.map_structure_up_to(0, lambda v: v, [1, 2])',
    't.map_structure_up_to([0, 0], lambda v: v, (1, 2))',
    't.map_structure_up_to({"a": 0}, lambda v: v, {"a": 1, "b": 2})',
    't.map_shape_structure(lambda s: len(s), {"a": (1, 2), "b": [(3,), (None, 4)], "c": ()})',
    't.map_shape_structure(lambda s: type(s).__name__, [[1, 2], [3]])',
    't.traverse(lambda x: x * 2 if isinstance(x, int) else None, [1, [2, 3]])',
    't.traverse(lambda x: "stop" if isinstance(x, list) and len(x) == 2 else None, [1, [2, 3]])',
    't.traverse(lambda x: t.MAP_TO_NONE if isinstance(x, int) else None, (1, [2, 3]))',
    't.traverse(lambda x: x + 1 if isinstance(x, int) else None, [1, [2, 3]], top_down=False)',
    't.traverse(lambda x: t.MAP_TO_NONE if isinstance(x, list) else None, (1, [2, 3]), top_down=False)',
    't.traverse(lambda x: sum(x.values()) if isinstance(x, dict) else None, {"b": 1, "a": 2}, top_down=False)',
    't.traverse(lambda x: None, 5)',
]

RUN = """
def outcome(expr):
    try:
        return repr(eval(expr))
    except Exception as e:
        return "raises " + type(e).__name__
RESULTS = [outcome(c) for c in CASES]
"""


def _outcomes(t) -> list:
    scope = {"t": t, "CASES": CASES}
    exec(HEADER + RUN, scope)  # noqa: S102 - the same cases as the Keras run below
    return scope["RESULTS"]


def _keras_outcomes() -> list:
    code = f"import keras\nt = keras.tree\nCASES = {CASES!r}\n{HEADER}{RUN}\nprint(repr(RESULTS))\n"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env,
                          cwd="/")
    assert proc.returncode == 0, proc.stderr[-2000:]
    import ast

    return ast.literal_eval(proc.stdout.strip().splitlines()[-1])


def test_keras_tree_is_a_public_module():
    assert flexflow_keras.tree is tree and "tree" in flexflow_keras.__all__
    assert tree.flatten({"b": 1, "a": [2, (3, None)]}) == [2, 3, None, 1]


def test_keras_tree_matches_keras_3():
    pytest.importorskip("keras")
    ours = _outcomes(tree)
    theirs = _keras_outcomes()
    mismatched = [(c, o, k) for c, o, k in zip(CASES, ours, theirs, strict=True) if o != k]
    assert not mismatched


def test_errors_name_the_function_and_the_difference():
    with pytest.raises(ValueError, match=r"map_structure: the structures differ at path \(1,\): a list and a tuple"):
        tree.map_structure(lambda a, b: a, [1, [2]], [1, (2,)])
    with pytest.raises(ValueError, match="the structure has 2 leaves, and flat_sequence holds 1 items"):
        tree.pack_sequence_as([0, 0], [1])
    with pytest.warns(DeprecationWarning, match="check_types is deprecated"):
        tree.assert_same_structure([1], [2], check_types=True)


def test_keras_tree_and_tf_nest_under_the_runner_as_tensorflow(tmp_path):
    pytest.importorskip("tensorflow")
    script = tmp_path / "nest.py"
    script.write_text("""
import tensorflow as tf
import keras
from keras import tree
print(keras.tree.flatten({"b": 1, "a": [2, None]}), tree.map_structure(lambda v: -v, {"b": 1}))
print(tf.nest.flatten({"b": 1, "a": [2, None]}), tf.nest.map_structure(lambda a, b: a + b, [1, (2, 3)], [10, (20, 30)]))
print(tf.nest.pack_sequence_as({"b": 0, "a": [0, 0]}, [1, 2, 3]), tf.nest.is_nested("a"), tf.nest.is_nested([1]))
print(tf.nest.map_structure(lambda a, b: a + b, [1, 2], (3, 4), check_types=False), tf.nest.flatten(None))
""")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    runs = [subprocess.run([sys.executable, *args, str(script)], capture_output=True, text=True, timeout=300,
                           env=env, cwd=tmp_path) for args in (["-m", "flexflow_keras"], [])]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    ours, theirs = ([ln for ln in r.stdout.splitlines() if not ln.startswith("[flexflow_keras]")] for r in runs)
    assert ours == theirs and len(ours) == 4
