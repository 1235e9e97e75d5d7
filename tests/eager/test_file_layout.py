"""eager.nn's files are organised by job: each module class in the file of its family, and
eager.nn.modules.<file> naming the classes torch.nn.modules.<file> defines (pickles,
safe_globals lists and isinstance checks spell those paths). The 600-line bound on every
module is tests/test_module_size.py's."""
import importlib
import pkgutil

import pytest

import eager
import eager.nn as nn


@pytest.mark.parametrize("family, classes", [
    ("activation", ["ReLU", "Tanh", "Sigmoid", "GELU", "Softmax", "LogSoftmax", "LeakyReLU", "MultiheadAttention"]),
    ("loss", ["MSELoss", "CrossEntropyLoss", "NLLLoss", "L1Loss", "CTCLoss"]),
    ("dropout", ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]),
    ("linear", ["Linear", "Bilinear", "Identity"]),
    ("flatten", ["Flatten", "Unflatten"]),
    ("containers", ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]),
    ("conv", ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "Fold", "Unfold"]),
    ("pooling", ["MaxPool2d", "AvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool3d", "LPPool2d", "MaxUnpool2d"]),
    ("normalization", ["LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d", "InstanceNorm2d",
                       "LocalResponseNorm"]),
    ("sparse", ["Embedding", "EmbeddingBag"]),
    ("resampling", ["Upsample", "ChannelShuffle", "PixelShuffle", "UpsamplingNearest2d"]),
    ("padding", ["ZeroPad2d", "ConstantPad3d", "ReflectionPad1d", "CircularPad2d"]),
    ("distance", ["CosineSimilarity", "PairwiseDistance"]),
])
def test_each_module_class_lives_in_the_file_of_its_family(family, classes):
    assert {c: getattr(nn, c).__module__ for c in classes} == {c: f"eager.nn.{family}" for c in classes}


def test_nn_modules_files_name_what_torch_defines_there():
    torch = pytest.importorskip("torch")
    import torch.nn.modules as torch_modules

    wrong = {}
    for info in pkgutil.iter_modules(torch_modules.__path__):
        names = getattr(importlib.import_module(f"torch.nn.modules.{info.name}"), "__all__", [])
        ours = [n for n in names if hasattr(nn, n)]  # the classes eager has
        if not ours:
            continue
        module = importlib.import_module(f"eager.nn.modules.{info.name}")
        lacking = [n for n in ours if getattr(module, n, None) is not getattr(nn, n)]
        if lacking:
            wrong[info.name] = lacking
    assert wrong == {}
    assert torch.nn.modules.fold.Fold.__name__ == eager.nn.modules.fold.Fold.__name__
