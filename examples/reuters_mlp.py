"""Reuters newswire topics, bag-of-words MLP: `python reuters_mlp.py -e 2 -b 32`."""

import numpy as np

import flexflow_keras as keras
from flexflow_keras import layers

MAX_WORDS = 1000


def vectorize(sequences, dim=MAX_WORDS):
    out = np.zeros((len(sequences), dim), dtype="float32")
    for i, seq in enumerate(sequences):
        out[i, [w for w in seq if w < dim]] = 1.0
    return out


def main():
    (x_train, y_train), (x_test, y_test) = keras.datasets.reuters.load_data(num_words=MAX_WORDS, test_split=0.2)
    num_classes = int(np.max(y_train)) + 1
    x_train, x_test = vectorize(x_train), vectorize(x_test)
    y_train = keras.utils.to_categorical(y_train, num_classes)
    y_test = keras.utils.to_categorical(y_test, num_classes)

    model = keras.Sequential([
        layers.Dense(512, input_shape=(MAX_WORDS,)),
        layers.Activation("relu"),
        layers.Dropout(0.5),
        layers.Dense(num_classes),
        layers.Activation("softmax"),
    ])
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=32, epochs=2, validation_split=0.1)
    loss, acc = model.evaluate(x_test, y_test, batch_size=32, verbose=0)
    print(f"test loss {loss:.4f}, test accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
