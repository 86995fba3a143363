"""Under `python -m flexflow_keras`, importing a package built on TensorFlow itself (tensorflow_datasets,
tensorflow_hub, tensorflow_text, keras_nlp, keras_hub, tensorflow_addons) stops with our
TensorFlowPackageError (a ModuleNotFoundError) naming the package and what to use instead. The TensorFlow
Developer certificate's C3 labs load ``tfds.load("imdb_reviews/subwords8k")`` and its encoder, and build
keras_nlp WordPiece tokenizers; before, the import gave a bare "No module named" here (none of these packages
is installed on this machine), and where one is installed it would be imported against the stand-in
tensorflow (not tried here)."""

import textwrap

from tests.flexflow_keras.tf_compare import run_script

PACKAGES = ["tensorflow_datasets", "tensorflow_hub", "tensorflow_text", "keras_nlp", "keras_hub",
            "tensorflow_addons"]


def test_imports_stop_with_a_clear_error(tmp_path):
    script = tmp_path / "imports.py"
    script.write_text(textwrap.dedent(f"""
        import json
        import tensorflow as tf
        out = {{}}
        for name in {PACKAGES!r} + ["tensorflow_datasets.core"]:
            try:
                __import__(name)
                out[name] = "imported"
            except ImportError as e:
                out[name] = [type(e).__name__, isinstance(e, ModuleNotFoundError), e.name, str(e)]
        try:
            import tensorflow_datasets as tfds
        except ImportError:
            tfds = None  # the usual guarded import falls back
        out["fallback"] = tfds is None
        print(json.dumps(out))
    """))
    out = run_script(script, runner=True)
    assert out.pop("fallback") is True
    for name, (kind, is_mnf, err_name, message) in out.items():
        top = name.split(".")[0]
        assert kind == "TensorFlowPackageError" and is_mnf and err_name == top  # Python imports the parent first
        assert message.startswith(f"import {top}: {top} cannot run under `python -m flexflow_keras`")
        assert message.endswith("or run the script with TensorFlow itself.")
    assert "keras.datasets" in out["tensorflow_datasets"][3] and "TextVectorization" in out["keras_nlp"][3]
    assert "keras.applications" in out["tensorflow_hub"][3]


def test_other_imports_unchanged(tmp_path):
    script = tmp_path / "other.py"
    script.write_text("import json, numpy, tensorflow as tf\nimport keras\n"
                      "print(json.dumps({'keras': keras.__name__.split('.')[0]}))\n")
    assert run_script(script, runner=True) == {"keras": "flexflow_keras"}
