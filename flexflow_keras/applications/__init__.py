"""`keras.applications`: the classic ImageNet models, built as Keras builds them (the same layers, names
and order, so Keras' weights files load), with their `preprocess_input` and `decode_predictions`.

Every model function takes Keras' arguments:

- include_top: whether to include the classifier; then the input has the model's default size
  (224x224x3 for most) with ImageNet weights.
- weights: None (random initialization), "imagenet" (read from the Keras cache, ``~/.keras/models``, under
  Keras' file name; flexflow_keras never downloads, and a missing file is an error that says where to put
  it) or the path of a weights file.
- input_tensor: a symbolic tensor to use as the image input (e.g. the output of augmentation layers).
- input_shape: (height, width, channels) when include_top is False or weights is not "imagenet"; each
  model has a minimum size; None without the top: any size.
- pooling: without the top, None (the last block's 4D output), "avg" or "max" (global pooling).
- classes: the number of classes of the top (1000 with ImageNet weights).
- classifier_activation: the top's activation (None or "softmax" with pretrained weights).
- name: the model's name.

These are all of Keras 3's applications.
"""

from flexflow_keras.applications import (
    convnext,
    densenet,
    efficientnet,
    efficientnet_v2,
    imagenet_utils,
    inception_resnet_v2,
    inception_v3,
    mobilenet,
    mobilenet_v2,
    mobilenet_v3,
    nasnet,
    resnet,
    resnet50,
    resnet_v2,
    vgg16,
    vgg19,
    xception,
)
from flexflow_keras.applications.convnext import (
    ConvNeXtBase,
    ConvNeXtLarge,
    ConvNeXtSmall,
    ConvNeXtTiny,
    ConvNeXtXLarge,
)
from flexflow_keras.applications.densenet import DenseNet121, DenseNet169, DenseNet201
from flexflow_keras.applications.efficientnet import (
    EfficientNetB0,
    EfficientNetB1,
    EfficientNetB2,
    EfficientNetB3,
    EfficientNetB4,
    EfficientNetB5,
    EfficientNetB6,
    EfficientNetB7,
)
from flexflow_keras.applications.efficientnet_v2 import (
    EfficientNetV2B0,
    EfficientNetV2B1,
    EfficientNetV2B2,
    EfficientNetV2B3,
    EfficientNetV2L,
    EfficientNetV2M,
    EfficientNetV2S,
)
from flexflow_keras.applications.inception_resnet_v2 import InceptionResNetV2
from flexflow_keras.applications.inception_v3 import InceptionV3
from flexflow_keras.applications.mobilenet import MobileNet
from flexflow_keras.applications.mobilenet_v2 import MobileNetV2
from flexflow_keras.applications.mobilenet_v3 import MobileNetV3Large, MobileNetV3Small
from flexflow_keras.applications.nasnet import NASNetLarge, NASNetMobile
from flexflow_keras.applications.resnet import ResNet50, ResNet101, ResNet152
from flexflow_keras.applications.resnet_v2 import ResNet50V2, ResNet101V2, ResNet152V2
from flexflow_keras.applications.vgg16 import VGG16
from flexflow_keras.applications.vgg19 import VGG19
from flexflow_keras.applications.xception import Xception

__all__ = [
    "ConvNeXtTiny", "ConvNeXtSmall", "ConvNeXtBase", "ConvNeXtLarge", "ConvNeXtXLarge", "DenseNet121", "DenseNet169", "DenseNet201", "EfficientNetB0", "EfficientNetB1", "EfficientNetB2", "EfficientNetB3", "EfficientNetB4", "EfficientNetB5", "EfficientNetB6", "EfficientNetB7", "EfficientNetV2B0", "EfficientNetV2B1", "EfficientNetV2B2", "EfficientNetV2B3", "EfficientNetV2S", "EfficientNetV2M", "EfficientNetV2L", "InceptionResNetV2", "InceptionV3", "MobileNet", "MobileNetV2", "MobileNetV3Small", "MobileNetV3Large", "NASNetMobile", "NASNetLarge", "ResNet50", "ResNet101", "ResNet152", "ResNet50V2", "ResNet101V2", "ResNet152V2", "VGG16", "VGG19", "Xception",
    "convnext", "densenet", "efficientnet", "efficientnet_v2", "imagenet_utils", "inception_resnet_v2", "inception_v3", "mobilenet", "mobilenet_v2", "mobilenet_v3", "nasnet", "resnet", "resnet50", "resnet_v2", "vgg16", "vgg19", "xception",
]
