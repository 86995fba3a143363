"""A functional model with two inputs whose branches are concatenated: `python func_mnist_mlp_concat.py`."""

import flexflow_keras as keras
from flexflow_keras import layers


def main():
    (x_train, y_train), _ = keras.datasets.mnist.load_data()
    x_train = x_train.reshape(-1, 784).astype("float32") / 255.0

    left_in = keras.Input(shape=(784,), name="left")
    right_in = keras.Input(shape=(784,), name="right")
    left = layers.Dense(256, activation="relu")(left_in)
    right = layers.Dense(256, activation="relu")(right_in)
    merged = layers.concatenate([left, right])
    hidden = layers.Dense(128, activation="relu")(merged)
    out = layers.Dense(10, activation="softmax", name="digits")(hidden)
    model = keras.Model(inputs=[left_in, right_in], outputs=out)
    model.summary()
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.05, momentum=0.9),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit([x_train, x_train], y_train, batch_size=64, epochs=1)


if __name__ == "__main__":
    main()
