"""`keras.layers`: the layer classes, `Input`, the merge functions and layer (de)serialization."""

from flexflow_keras.layers.activation_layers import ELU, LeakyReLU, ReLU, Softmax
from flexflow_keras.layers.attention import MultiHeadAttention
from flexflow_keras.layers.attention_dot import AdditiveAttention, Attention
from flexflow_keras.layers.attention_grouped import GroupedQueryAttention, GroupQueryAttention
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.conv1d import (
    AveragePooling1D,
    AvgPool1D,
    Conv1D,
    Convolution1D,
    MaxPool1D,
    MaxPooling1D,
)
from flexflow_keras.layers.conv_lstm import ConvLSTM1D, ConvLSTM2D, ConvLSTM3D
from flexflow_keras.layers.conv_transpose import (
    Conv1DTranspose,
    Conv2DTranspose,
    Convolution2DTranspose,
    Deconv2D,
    Deconvolution2D,
)
from flexflow_keras.layers.convolutional import Conv2D, Convolution2D
from flexflow_keras.layers.core import (
    Activation,
    Dense,
    Dropout,
    Embedding,
    Flatten,
    Lambda,
    Permute,
    Reshape,
)
from flexflow_keras.layers.depthwise import (
    DepthwiseConv1D,
    DepthwiseConv2D,
    SeparableConv1D,
    SeparableConv2D,
    SeparableConvolution1D,
    SeparableConvolution2D,
)
from flexflow_keras.layers.discretization import Discretization
from flexflow_keras.layers.einsum_dense import EinsumDense
from flexflow_keras.layers.hashing import HashedCrossing, Hashing
from flexflow_keras.layers.image_augmentation import (
    CenterCrop,
    RandomBrightness,
    RandomContrast,
    RandomCrop,
    RandomFlip,
    RandomRotation,
    RandomTranslation,
    RandomZoom,
    Resizing,
)
from flexflow_keras.layers.index_lookup import IntegerLookup, StringLookup
from flexflow_keras.layers.input_layer import Input, InputLayer
from flexflow_keras.layers.input_spec import InputSpec
from flexflow_keras.layers.merging import (
    Add,
    Average,
    Concatenate,
    Maximum,
    Minimum,
    Multiply,
    Subtract,
    add,
    average,
    concatenate,
    maximum,
    minimum,
    multiply,
    subtract,
)
from flexflow_keras.layers.misc_layers import Dot, Identity, PReLU, UnitNormalization, dot
from flexflow_keras.layers.normalization import BatchNormalization, LayerNormalization
from flexflow_keras.layers.normalization_group import GroupNormalization, RMSNormalization
from flexflow_keras.layers.pooling import (
    AveragePooling2D,
    AvgPool2D,
    GlobalAveragePooling1D,
    GlobalAveragePooling2D,
    GlobalAvgPool1D,
    GlobalAvgPool2D,
    GlobalMaxPool1D,
    GlobalMaxPool2D,
    GlobalMaxPooling1D,
    GlobalMaxPooling2D,
    MaxPool2D,
    MaxPooling2D,
)
from flexflow_keras.layers.preprocessing import CategoryEncoding, Normalization, Rescaling
from flexflow_keras.layers.recurrent import GRU, LSTM, SimpleRNN
from flexflow_keras.layers.recurrent_cells import RNN, GRUCell, LSTMCell, SimpleRNNCell, StackedRNNCells
from flexflow_keras.layers.regularization import (
    ActivityRegularization,
    AlphaDropout,
    GaussianDropout,
    GaussianNoise,
    SpatialDropout1D,
    SpatialDropout2D,
    SpatialDropout3D,
)
from flexflow_keras.layers.rnn_wrappers import Bidirectional, Masking, RepeatVector, TimeDistributed
from flexflow_keras.layers.spatial_reshaping import (
    Cropping1D,
    Cropping2D,
    UpSampling1D,
    UpSampling2D,
    ZeroPadding1D,
    ZeroPadding2D,
)
from flexflow_keras.layers.stft_spectrogram import STFTSpectrogram
from flexflow_keras.layers.text_vectorization import TextVectorization
from flexflow_keras.layers.volumetric import (
    AveragePooling3D,
    AvgPool3D,
    Conv3D,
    Conv3DTranspose,
    Convolution3D,
    Convolution3DTranspose,
    Cropping3D,
    GlobalAveragePooling3D,
    GlobalAvgPool3D,
    GlobalMaxPool3D,
    GlobalMaxPooling3D,
    MaxPool3D,
    MaxPooling3D,
    UpSampling3D,
    ZeroPadding3D,
)
from flexflow_keras.utils.serialization import deserialize_keras_object, serialize_keras_object

_CLASSES = [Activation, Add, Average, AveragePooling2D, BatchNormalization, Concatenate, Conv2D, Dense,
            Dropout, ELU, Embedding, Flatten, GlobalAveragePooling1D, GlobalAveragePooling2D,
            GlobalMaxPooling1D, GlobalMaxPooling2D, InputLayer, Lambda, LayerNormalization, LeakyReLU,
            Maximum, MaxPooling2D, Minimum, Multiply, Permute, ReLU, Reshape, Softmax, Subtract]
# i9-conv
_CLASSES += [AveragePooling1D, Conv1D, Conv1DTranspose, Conv2DTranspose, Cropping1D, Cropping2D, DepthwiseConv1D,
             DepthwiseConv2D, MaxPooling1D, SeparableConv1D, SeparableConv2D, UpSampling1D, UpSampling2D,
             ZeroPadding1D, ZeroPadding2D]
# i9-misc-layers
_CLASSES += [ActivityRegularization, AlphaDropout, CategoryEncoding, Dot, GaussianDropout, GaussianNoise,
             Identity, MultiHeadAttention, Normalization, PReLU, Rescaling, SpatialDropout1D, SpatialDropout2D,
             SpatialDropout3D, UnitNormalization]
# i9-rnn
_CLASSES += [Bidirectional, GRU, GRUCell, LSTM, LSTMCell, Masking, RepeatVector, RNN, SimpleRNN, SimpleRNNCell,
             StackedRNNCells, TimeDistributed]
# i9-rnn2
_CLASSES += [AdditiveAttention, Attention]
_CLASSES += [GroupedQueryAttention]
_CLASSES += [CenterCrop, RandomBrightness, RandomContrast, RandomCrop, RandomFlip, RandomRotation, RandomTranslation,
             RandomZoom, Resizing]
_CLASSES += [GroupNormalization, RMSNormalization]
_CLASSES += [IntegerLookup, StringLookup, TextVectorization]  # host preprocessing (layers/host_layer.py)
_CLASSES += [Discretization, HashedCrossing, Hashing]  # host preprocessing
_CLASSES += [EinsumDense]
_CLASSES += [AveragePooling3D, Conv3D, Conv3DTranspose, Cropping3D, GlobalAveragePooling3D, GlobalMaxPooling3D, MaxPooling3D,
             UpSampling3D, ZeroPadding3D]
_CLASSES += [ConvLSTM1D, ConvLSTM2D, ConvLSTM3D]
_CLASSES += [STFTSpectrogram]
ALL_OBJECTS = {cls.__name__: cls for cls in _CLASSES}


def serialize(layer) -> dict:
    """A layer as Keras 3 writes it: ``{"module", "class_name", "config", "registered_name"}`` (``module``
    "keras.layers" for built-in layers, so tf.keras finds them in nested configs: TimeDistributed, RNN
    cells, Bidirectional; the defining module and ``"package>Name"`` for registered user classes), with
    ``build_config`` once built."""
    return serialize_keras_object(layer)


def serialize_wrapped(layer) -> dict:
    """`serialize` for a layer inside a built-in layer's config (an RNN cell, a wrapped layer), without
    ``build_config``: the wrapper builds (or copies) it when it is called, so reloaded configs compare
    equal."""
    return {k: v for k, v in serialize(layer).items() if k != "build_config"}


def deserialize(config, custom_objects=None):
    """A layer (or model) from `serialize`'s output; user classes via `custom_objects` or registration."""
    from flexflow_keras import models

    objects = dict(ALL_OBJECTS)
    objects.update({"Sequential": models.Sequential, "Functional": models.Model, "Model": models.Model})
    return deserialize_keras_object(config, custom_objects, module_objects=objects, kind="layer")


__all__ = [cls.__name__ for cls in _CLASSES] + [
    "AvgPool1D", "AvgPool2D", "Convolution1D", "Convolution2D", "Convolution2DTranspose", "Deconv2D",
    "Deconvolution2D", "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalMaxPool1D", "GlobalMaxPool2D", "MaxPool1D",
    "SeparableConvolution1D", "SeparableConvolution2D", "Input", "InputSpec", "Layer", "MaxPool2D", "add",
    "average", "concatenate", "deserialize", "maximum", "minimum", "multiply", "serialize", "subtract",
]
__all__ += ["dot"]  # i9-misc-layers
__all__ += ["AvgPool3D", "Convolution3D", "Convolution3DTranspose", "GlobalAvgPool3D", "GlobalMaxPool3D", "MaxPool3D"]
__all__ += ["GroupQueryAttention"]  # the name Keras 3 exports for GroupedQueryAttention

from flexflow_keras.layers import keras2_paths as _keras2_paths  # noqa: E402

_keras2_paths.install()  # Keras 2 module paths (keras.layers.noise, .merge, .core, ...)
from flexflow_keras.layers import experimental  # noqa: E402,F401  tf.keras 2's layers.experimental (RandomFourierFeatures)
from flexflow_keras.layers import unsupported as _unsupported  # noqa: E402


def __getattr__(name: str):
    # a Keras 3 layer flexflow_keras does not have: say so (layers/unsupported.py)
    if name in _unsupported.UNSUPPORTED:
        raise _unsupported.error(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
