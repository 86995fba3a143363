"""An optimizer updates only the variables it was built for (its first apply_gradients, apply or build), as
tf.keras 3.15's: another variable, even of the same shape, is a ValueError ("Unknown variable"), and a second
build is a no-op. Before, a built optimizer silently made slots for any new variable and updated it.
`apply(grads)` without variables updates the built ones, one gradient each."""

import numpy as np
import pytest

import flexflow_keras as ff


def _outcomes(lib):
    out = []
    for make in (lambda: lib.optimizers.SGD(0.1), lambda: lib.optimizers.Adam(0.1)):
        for how in ("apply_gradients", "apply", "build"):
            opt = make()
            v1, v2 = lib.Variable(np.ones(3, "float32")), lib.Variable(np.ones(2, "float32"))
            v3 = lib.Variable(np.ones(3, "float32"))
            if how == "build":
                opt.build([v1])
                opt.build([v1, v2])  # no-op: still built for v1 alone
            else:
                opt.apply_gradients([(np.ones(3, "float32"), v1)])
            for vs in ([v2], [v3], [v1, v2], [v1]):
                gs = [np.full(v.shape, 0.5, "float32") for v in vs]
                try:
                    opt.apply(gs, vs) if how == "apply" else opt.apply_gradients(zip(gs, vs, strict=True))
                    out.append([np.asarray(v).round(5).tolist() for v in vs])
                except ValueError as e:
                    out.append(("ValueError", str(e).startswith("Unknown variable")))
            opt.apply([np.full(3, 0.5, "float32")])  # the variables it was built for
            out.append(np.asarray(v1).round(5).tolist())
    return out


def test_unknown_variables_as_tf_keras():
    tf = pytest.importorskip("tensorflow")
    assert _outcomes(ff) == _outcomes(tf.keras)


def test_apply_without_variables_needs_a_build():
    opt = ff.optimizers.SGD(0.1)
    with pytest.raises(ValueError, match="build"):
        opt.apply([np.ones(3, "float32")])
    opt.build([ff.Variable(np.ones(3, "float32"))])
    with pytest.raises(ValueError, match="one gradient per variable"):
        opt.apply([np.ones(3, "float32"), np.ones(2, "float32")])
