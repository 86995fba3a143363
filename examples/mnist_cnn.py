"""MNIST convnet: `python mnist_cnn.py -e 1 -b 64 -p 20`."""

import flexflow_keras as keras
from flexflow_keras import layers


def main():
    (x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()
    x_train = x_train.reshape(-1, 28, 28, 1).astype("float32") / 255.0
    x_test = x_test.reshape(-1, 28, 28, 1).astype("float32") / 255.0
    y_train = keras.utils.to_categorical(y_train, 10)
    y_test = keras.utils.to_categorical(y_test, 10)

    model = keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
        layers.Conv2D(64, (3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(),
        layers.Dense(128, activation="relu"),
        layers.Dense(10, activation="softmax"),
    ])
    model.summary()
    model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.Adam(learning_rate=1e-3),
                  metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=64, epochs=1, validation_split=0.1)
    score = model.evaluate(x_test, y_test, verbose=0)
    print(f"test loss {score[0]:.4f}, test accuracy {score[1]:.4f}")


if __name__ == "__main__":
    main()
