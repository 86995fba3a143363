"""A subclassed model whose call() uses layers: `python subclassed_mnist.py -e 1`."""

import flexflow_keras as keras
from flexflow_keras import layers


class MLP(keras.Model):
    def __init__(self, hidden=256, classes=10, **kwargs):
        super().__init__(**kwargs)
        self.hidden1 = layers.Dense(hidden, activation="relu")
        self.dropout = layers.Dropout(0.2)
        self.hidden2 = layers.Dense(hidden, activation="relu")
        self.out = layers.Dense(classes)

    def call(self, inputs, training=False):
        x = self.hidden1(inputs)
        x = self.dropout(x, training=training)
        x = self.hidden2(x)
        return self.out(x)


def main():
    (x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()
    x_train = x_train.reshape(-1, 784).astype("float32") / 255.0
    x_test = x_test.reshape(-1, 784).astype("float32") / 255.0
    model = MLP()
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=64, epochs=1)
    print("test:", model.evaluate(x_test, y_test, verbose=0, return_dict=True))


if __name__ == "__main__":
    main()
