"""`keras.datasets`: mnist, fashion_mnist, cifar10, cifar100, imdb, reuters, boston_housing, each with
Keras' ``load_data`` signature. Data comes from -d when given (it always wins; any detected format that
holds the dataset, else an error) or the Keras cache (Keras' file names and formats); without them,
deterministic learnable synthetic data with the real shapes, dtypes and sample counts, logged. Nothing is
downloaded. See datasets/_common.py for the lookup rules.
"""

from __future__ import annotations

from flexflow_keras.datasets import boston_housing, cifar10, cifar100, fashion_mnist, imdb, mnist, reuters

__all__ = ["mnist", "fashion_mnist", "cifar10", "cifar100", "imdb", "reuters", "boston_housing"]
