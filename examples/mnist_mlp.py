"""MNIST multilayer perceptron, the tf.keras way: `python mnist_mlp.py -e 1 -b 64 -p 20 [-d mnist.npz]`.

With no MNIST file (-d, or ~/.keras/datasets/mnist.npz) the dataset loader returns learnable synthetic
data of MNIST's shapes and says so in the log.
"""

import flexflow_keras as keras
from flexflow_keras import layers


def main():
    (x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()
    x_train = x_train.reshape(-1, 784).astype("float32") / 255.0
    x_test = x_test.reshape(-1, 784).astype("float32") / 255.0

    model = keras.Sequential([
        keras.Input(shape=(784,)),
        layers.Dense(512, activation="relu"),
        layers.Dense(512, activation="relu"),
        layers.Dense(10, activation="softmax"),
    ])
    model.summary()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=64, epochs=1)
    loss, acc = model.evaluate(x_test, y_test, verbose=0)
    print(f"test loss {loss:.4f}, test accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
