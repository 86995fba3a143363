"""The vocabularies tf.keras writes beside a `.keras` model's config: an adapted TextVectorization,
StringLookup or IntegerLookup has ``"vocabulary": None`` in its config and its tokens in
``assets/<layer path>/vocabulary.txt`` (the layer path as the weights file names it: ``layers/<class in
snake case>[_k]``). `fill_vocabularies` puts them into the configs before the model is rebuilt, so the
layers hold them from the start (their output widths can depend on them)."""

from __future__ import annotations

import zipfile

from flexflow_keras.utils import naming

_LOOKUPS = {"TextVectorization": str, "StringLookup": str, "IntegerLookup": int}


def fill_vocabularies(config: dict, path: str) -> None:
    """Set the vocabulary of every lookup layer in `config` (a model's) that the archive at `path` holds as
    an asset file and the config leaves out."""
    try:
        with zipfile.ZipFile(path) as zf:
            assets = {n: zf.read(n) for n in zf.namelist() if n.startswith("assets/") and n.endswith(
                "/vocabulary.txt")}
    except (OSError, zipfile.BadZipFile):
        return
    if assets:
        _fill(config, "", assets)


def _fill(entry: dict, prefix: str, assets: dict) -> None:
    layers = (entry.get("config") or {}).get("layers")
    if not isinstance(layers, list):
        return
    used: dict[str, int] = {}
    for child in layers:
        cls = child.get("class_name", "")
        where = f"{prefix}layers/{naming.unique_in(naming.to_snake_case(cls), used)}"
        conf = child.get("config") or {}
        data = assets.get(f"assets/{where}/vocabulary.txt")
        if cls in _LOOKUPS and conf.get("vocabulary") is None and data is not None:
            lines = data.decode("utf-8").split("\n")
            while lines and lines[-1] == "" and len(lines) > 1 and cls != "TextVectorization":
                lines.pop()
            conf["vocabulary"] = [_LOOKUPS[cls](t) for t in lines]
        _fill(child, where + "/", assets)
