"""`eager.nn`: Modules, Parameters, layers and losses with PyTorch's names and behavior."""
from __future__ import annotations

from . import functional, init  # noqa: F401
from .linear import Bilinear, Identity, Linear  # noqa: F401
from .activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh  # noqa: F401
from .containers import ModuleList, Sequential  # noqa: F401
from .dropout import Dropout  # noqa: F401
from .flatten import Flatten  # noqa: F401
from .loss import CrossEntropyLoss, MSELoss, NLLLoss  # noqa: F401
from .module import Module  # noqa: F401
from ._buffer import Buffer  # noqa: F401
from .parameter import Parameter  # noqa: F401
from .activation import (  # noqa: F401
    CELU, ELU, GLU, SELU, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid, Mish, MultiheadAttention,
    ReLU6, SiLU, Softmin, Softplus, Softsign, Tanhshrink,
)
from .activation import Hardshrink, PReLU, Softmax2d, Softshrink, Threshold  # noqa: F401
from .padding import (  # noqa: F401
    CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d, ReflectionPad1d,
    ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, ZeroPad1d, ZeroPad2d,
    ZeroPad3d,
)
from .distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from .resampling import PixelShuffle, PixelUnshuffle, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401
from .containers import ModuleDict, ParameterDict, ParameterList  # noqa: F401
from .flatten import Unflatten  # noqa: F401
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d  # noqa: F401
from .pooling import (  # noqa: F401
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool2d, AvgPool1d, AvgPool2d, AvgPool3d,
    MaxPool1d, MaxPool2d, MaxPool3d,
)
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, LayerNorm, RMSNorm  # noqa: F401
from .sparse import Embedding  # noqa: F401
from .resampling import Upsample  # noqa: F401
from .dropout import AlphaDropout, Dropout1d, Dropout2d, Dropout3d  # noqa: F401
from .loss import (  # noqa: F401
    BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss,
    GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss, MarginRankingLoss, MultiLabelSoftMarginLoss,
    PoissonNLLLoss, SmoothL1Loss, SoftMarginLoss, TripletMarginLoss,
)
from .normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: F401
from .sparse import EmbeddingBag  # noqa: F401
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell  # noqa: F401
from .transformer import (  # noqa: F401
    Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer,
)
from . import utils  # noqa: F401,E402
from . import modules, parallel  # noqa: F401,E402  (torch.nn.modules.<file>.<Class>, DataParallel)
from .parallel import DataParallel  # noqa: F401,E402
from .activation import RReLU  # noqa: F401,E402
from .conv import ConvTranspose3d, Fold, Unfold  # noqa: F401,E402
from .pooling import (  # noqa: F401,E402
    AdaptiveMaxPool1d, AdaptiveMaxPool3d, LPPool1d, LPPool2d, LPPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d,
    FractionalMaxPool2d, FractionalMaxPool3d,
)
from .normalization import LocalResponseNorm  # noqa: F401,E402
from .resampling import ChannelShuffle  # noqa: F401,E402
from .dropout import FeatureAlphaDropout  # noqa: F401,E402
from .loss import (  # noqa: F401,E402
    CTCLoss, MultiLabelMarginLoss, MultiMarginLoss, TripletMarginWithDistanceLoss,
)
from .rnn import RNNBase, RNNCellBase  # noqa: F401,E402
from .lazy import (  # noqa: F401,E402
    LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d,
    LazyConvTranspose2d, LazyConvTranspose3d, LazyLinear, UninitializedBuffer, UninitializedParameter,
)
from .lazy import LazyModuleMixin  # noqa: F401,E402  (torch.nn.modules.lazy's, one definition)
from . import parameter as _parameter_module  # noqa: E402

# torch.nn.parameter.UninitializedParameter / UninitializedBuffer (defined with the lazy modules)
_parameter_module.UninitializedParameter = UninitializedParameter  # type: ignore[attr-defined]
_parameter_module.UninitializedBuffer = UninitializedBuffer  # type: ignore[attr-defined]

__all__ = ["Module", "Parameter", "Buffer", "Linear", "Identity", "ReLU", "Tanh", "Sigmoid", "GELU", "Softmax",
           "LogSoftmax", "Dropout", "Flatten", "Sequential", "ModuleList", "MSELoss", "CrossEntropyLoss",
           "NLLLoss", "functional", "init", "utils",
           "CELU", "ELU", "GLU", "SELU", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU", "LogSigmoid", "Mish",
           "MultiheadAttention", "ReLU6", "SiLU", "Softmin", "Softplus", "Softsign", "Tanhshrink",
           "ModuleDict", "ParameterDict", "ParameterList", "Unflatten",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "AvgPool1d", "AvgPool2d", "BatchNorm1d",
           "BatchNorm2d", "BatchNorm3d", "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "Embedding",
           "GroupNorm", "InstanceNorm2d", "Upsample",
           "LayerNorm", "MaxPool1d", "MaxPool2d", "RMSNorm",
           "AlphaDropout", "BCELoss", "BCEWithLogitsLoss", "CosineEmbeddingLoss", "Dropout1d", "Dropout2d",
           "Dropout3d", "GaussianNLLLoss", "HingeEmbeddingLoss", "HuberLoss", "KLDivLoss", "L1Loss",
           "MarginRankingLoss", "MultiLabelSoftMarginLoss", "PoissonNLLLoss", "SmoothL1Loss", "SoftMarginLoss",
           "TripletMarginLoss", "Bilinear",
           "GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNCell",
           "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer",
           "Hardshrink", "PReLU", "Softmax2d", "Softshrink", "Threshold",
           "CircularPad1d", "CircularPad2d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "CosineSimilarity",
           "PairwiseDistance", "PixelShuffle", "PixelUnshuffle", "ReflectionPad1d", "ReflectionPad2d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "UpsamplingBilinear2d", "UpsamplingNearest2d",
           "ZeroPad1d", "ZeroPad2d", "Transformer", "InstanceNorm1d", "InstanceNorm3d", "EmbeddingBag",
           "AdaptiveAvgPool3d", "AvgPool3d", "Conv3d", "MaxPool3d", "modules", "parallel", "DataParallel",
           "RReLU", "AdaptiveMaxPool1d", "AdaptiveMaxPool3d", "ChannelShuffle", "Fold", "LocalResponseNorm",
           "LPPool1d", "LPPool2d", "LPPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "Unfold",
           "FractionalMaxPool2d", "FractionalMaxPool3d",
           "FeatureAlphaDropout", "CircularPad3d", "ReflectionPad3d", "ZeroPad3d",
           "MultiLabelMarginLoss", "MultiMarginLoss", "TripletMarginWithDistanceLoss", "RNNBase", "RNNCellBase",
           "ConvTranspose3d", "CTCLoss", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyLinear", "UninitializedBuffer", "UninitializedParameter"]
from . import _constants  # noqa: E402

_constants.apply()  # PyTorch's __constants__ on each module class
from . import grad  # noqa: E402  (torch.nn.grad: conv{1,2,3}d_input / _weight)

functional.grad = grad  # type: ignore[attr-defined]  # torch.nn.functional.grad is that module too
