"""CIFAR-10 convnet with BatchNormalization and Dropout: `python cifar10_cnn.py -e 1 -b 64 -p 20`."""

import flexflow_keras as keras
from flexflow_keras import layers


def main():
    (x_train, y_train), (x_test, y_test) = keras.datasets.cifar10.load_data()
    x_train = x_train.astype("float32") / 255.0
    x_test = x_test.astype("float32") / 255.0

    model = keras.Sequential([
        keras.Input(shape=(32, 32, 3)),
        layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.BatchNormalization(),
        layers.Conv2D(32, 3, activation="relu"),
        layers.MaxPooling2D(2),
        layers.Dropout(0.25),
        layers.Conv2D(64, 3, padding="same", activation="relu"),
        layers.BatchNormalization(),
        layers.Conv2D(64, 3, activation="relu"),
        layers.MaxPooling2D(2),
        layers.Dropout(0.25),
        layers.Flatten(),
        layers.Dense(256, activation="relu"),
        layers.Dropout(0.5),
        layers.Dense(10, activation="softmax"),
    ])
    model.summary()
    model.compile(optimizer=keras.optimizers.RMSprop(learning_rate=1e-3),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=64, epochs=1, validation_data=(x_test[:1000], y_test[:1000]))
    loss, acc = model.evaluate(x_test, y_test, verbose=0)
    print(f"test loss {loss:.4f}, test accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
