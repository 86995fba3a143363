"""The eager-split tests' forcing: split every eligible call whatever its size and the machine's free cores,
on a pool of their own, counting the splits (ops/eager_split.py)."""

from concurrent.futures import ThreadPoolExecutor

from flexflow_keras.ops import eager_split


def forcing(monkeypatch, threshold: str):
    """Generator for a fixture: sets eager_split's `threshold` (MIN_MACS, MIN_ELEMENTS) to 0 and yields
    {"forward": n, "backward": n}, the splits made."""
    pool = ThreadPoolExecutor(1)
    calls = {"forward": 0, "backward": 0}
    monkeypatch.setattr(eager_split, threshold, 0)
    monkeypatch.setattr(eager_split, "_pool", lambda: pool)
    for name in ("forward", "backward"):
        real = getattr(eager_split, f"_split_{name}")

        def counted(*args, _real=real, _name=name):
            calls[_name] += 1
            return _real(*args)
        monkeypatch.setattr(eager_split, f"_split_{name}", counted)
    yield calls
    pool.shutdown()
