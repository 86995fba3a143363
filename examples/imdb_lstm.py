"""Sentiment classification with an LSTM, shaped like Keras 2.3.1's imdb_lstm example:
`python imdb_lstm.py -e 1 -b 32 [--samples N] [--mask-zero]`.

Embedding(max_features, 128) -> LSTM(128) -> Dense(1, sigmoid) over sequences of `maxlen` word ids. The
data is synthetic (no download): left-padded sequences of random lengths whose label says whether
"positive" word ids (the lower half of the vocabulary) outnumber "negative" ones, so the task is learnable.
With --mask-zero the padding id 0 is masked (Embedding(mask_zero=True)) and the LSTM skips it.
"""

import argparse

import numpy as np

import flexflow_keras as keras
from flexflow_keras import layers


def synthetic_reviews(n, maxlen, max_features, seed=0):
    rng = np.random.default_rng(seed)
    x = np.zeros((n, maxlen), np.int32)
    y = np.zeros((n,), np.float32)
    half = max_features // 2
    for i in range(n):
        length = int(rng.integers(maxlen // 4, maxlen + 1))
        positive = rng.random() < 0.5
        p_low = 0.7 if positive else 0.3
        low = rng.random(length) < p_low
        words = np.where(low, rng.integers(1, half, length), rng.integers(half, max_features, length))
        x[i, maxlen - length:] = words  # pre-padding, as pad_sequences does
        y[i] = float(positive)
    return x, y


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--maxlen", type=int, default=80)
    ap.add_argument("--max-features", type=int, default=20000)
    ap.add_argument("--units", type=int, default=128)
    ap.add_argument("--mask-zero", action="store_true")
    args, _ = ap.parse_known_args(argv)

    x, y = synthetic_reviews(args.samples, args.maxlen, args.max_features)
    split = int(0.8 * len(x))
    model = keras.Sequential([
        keras.Input(shape=(args.maxlen,), dtype="int32"),
        layers.Embedding(args.max_features, 128, mask_zero=args.mask_zero),
        layers.LSTM(args.units, dropout=0.2, recurrent_dropout=0.2),
        layers.Dense(1, activation="sigmoid"),
    ])
    model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
    model.fit(x[:split], y[:split], batch_size=32, epochs=15, validation_data=(x[split:], y[split:]))
    score, acc = model.evaluate(x[split:], y[split:], batch_size=32, verbose=0)
    print(f"Test score: {score:.4f}")
    print(f"Test accuracy: {acc:.4f}")


if __name__ == "__main__":
    main()
