"""PyTorch's `__constants__` of each module class (the attributes TorchScript treats as constants,
which scripts and tools read), by the torch.nn.modules file that defines the class: one table, set
on eager's classes when eager.nn loads (`apply`)."""
from __future__ import annotations

import importlib

CONSTANTS: dict[str, dict[str, str]] = {
    "activation": {
        "Threshold": "threshold value inplace",
        "ReLU": "inplace",
        "RReLU": "lower upper inplace",
        "Hardtanh": "min_val max_val inplace",
        "ReLU6": "min_val max_val inplace",
        "Hardsigmoid": "inplace",
        "SiLU": "inplace",
        "Mish": "inplace",
        "Hardswish": "inplace",
        "ELU": "alpha inplace",
        "CELU": "alpha inplace",
        "SELU": "inplace",
        "GLU": "dim",
        "GELU": "approximate",
        "Hardshrink": "lambd",
        "LeakyReLU": "inplace negative_slope",
        "Softplus": "beta threshold",
        "Softshrink": "lambd",
        "MultiheadAttention": "batch_first",
        "PReLU": "num_parameters",
        "Softmin": "dim",
        "Softmax": "dim",
        "LogSoftmax": "dim",
    },
    "batchnorm": {
        "_NormBase": "track_running_stats momentum eps num_features affine",
        "_BatchNorm": "track_running_stats momentum eps num_features affine",
        "BatchNorm1d": "track_running_stats momentum eps num_features affine",
        "LazyBatchNorm1d": "track_running_stats momentum eps num_features affine",
        "BatchNorm2d": "track_running_stats momentum eps num_features affine",
        "LazyBatchNorm2d": "track_running_stats momentum eps num_features affine",
        "BatchNorm3d": "track_running_stats momentum eps num_features affine",
        "LazyBatchNorm3d": "track_running_stats momentum eps num_features affine",
    },
    "conv": {
        "_ConvNd": "stride padding dilation groups padding_mode output_padding in_channels out_channels kernel_size",
        "Conv1d": "stride padding dilation groups padding_mode output_padding in_channels out_channels kernel_size",
        "Conv2d": "stride padding dilation groups padding_mode output_padding in_channels out_channels kernel_size",
        "Conv3d": "stride padding dilation groups padding_mode output_padding in_channels out_channels kernel_size",
        "_ConvTransposeNd": ("stride padding dilation groups padding_mode output_padding in_channels "
            "out_channels kernel_size"),
        "ConvTranspose1d": ("stride padding dilation groups padding_mode output_padding in_channels "
            "out_channels kernel_size"),
        "ConvTranspose2d": ("stride padding dilation groups padding_mode output_padding in_channels "
            "out_channels kernel_size"),
        "ConvTranspose3d": ("stride padding dilation groups padding_mode output_padding in_channels "
            "out_channels kernel_size"),
        "LazyConv1d": ("stride padding dilation groups padding_mode output_padding in_channels "
            "out_channels kernel_size"),
        "LazyConv2d": ("stride padding dilation groups padding_mode output_padding in_channels "
            "out_channels kernel_size"),
        "LazyConv3d": ("stride padding dilation groups padding_mode output_padding in_channels "
            "out_channels kernel_size"),
        "LazyConvTranspose1d": ("stride padding dilation groups padding_mode output_padding in_channels "
            "out_channels kernel_size"),
        "LazyConvTranspose2d": ("stride padding dilation groups padding_mode output_padding in_channels "
            "out_channels kernel_size"),
        "LazyConvTranspose3d": ("stride padding dilation groups padding_mode output_padding in_channels "
            "out_channels kernel_size"),
    },
    "distance": {
        "PairwiseDistance": "norm eps keepdim",
        "CosineSimilarity": "dim eps",
    },
    "dropout": {
        "_DropoutNd": "p inplace",
        "Dropout": "p inplace",
        "Dropout1d": "p inplace",
        "Dropout2d": "p inplace",
        "Dropout3d": "p inplace",
        "AlphaDropout": "p inplace",
        "FeatureAlphaDropout": "p inplace",
    },
    "flatten": {
        "Flatten": "start_dim end_dim",
        "Unflatten": "dim unflattened_size",
    },
    "fold": {
        "Fold": "output_size kernel_size dilation padding stride",
        "Unfold": "kernel_size dilation padding stride",
    },
    "instancenorm": {
        "_InstanceNorm": "track_running_stats momentum eps num_features affine",
        "InstanceNorm1d": "track_running_stats momentum eps num_features affine",
        "InstanceNorm2d": "track_running_stats momentum eps num_features affine",
        "InstanceNorm3d": "track_running_stats momentum eps num_features affine",
    },
    "linear": {
        "Linear": "in_features out_features",
        "NonDynamicallyQuantizableLinear": "in_features out_features",
        "Bilinear": "in1_features in2_features out_features",
        "LazyLinear": "in_features out_features",
    },
    "loss": {
        "L1Loss": "reduction",
        "NLLLoss": "ignore_index reduction",
        "PoissonNLLLoss": "log_input full eps reduction",
        "GaussianNLLLoss": "full eps reduction",
        "KLDivLoss": "reduction",
        "MSELoss": "reduction",
        "BCELoss": "reduction",
        "HingeEmbeddingLoss": "margin reduction",
        "MultiLabelMarginLoss": "reduction",
        "SmoothL1Loss": "reduction",
        "HuberLoss": "reduction delta",
        "SoftMarginLoss": "reduction",
        "CrossEntropyLoss": "ignore_index reduction label_smoothing",
        "MultiLabelSoftMarginLoss": "reduction",
        "CosineEmbeddingLoss": "margin reduction",
        "MarginRankingLoss": "margin reduction",
        "MultiMarginLoss": "p margin reduction",
        "TripletMarginLoss": "margin p eps swap reduction",
        "TripletMarginWithDistanceLoss": "margin swap reduction",
        "CTCLoss": "blank reduction",
    },
    "normalization": {
        "LocalResponseNorm": "size alpha beta k",
        "LayerNorm": "normalized_shape eps elementwise_affine",
        "GroupNorm": "num_groups num_channels eps affine",
        "RMSNorm": "normalized_shape eps elementwise_affine",
    },
    "padding": {
        "_CircularPadNd": "padding",
        "CircularPad1d": "padding",
        "CircularPad2d": "padding",
        "CircularPad3d": "padding",
        "_ConstantPadNd": "padding value",
        "ConstantPad1d": "padding value",
        "ConstantPad2d": "padding value",
        "ConstantPad3d": "padding value",
        "_ReflectionPadNd": "padding",
        "ReflectionPad1d": "padding",
        "ReflectionPad2d": "padding",
        "ReflectionPad3d": "padding",
        "_ReplicationPadNd": "padding",
        "ReplicationPad1d": "padding",
        "ReplicationPad2d": "padding",
        "ReplicationPad3d": "padding",
        "ZeroPad1d": "padding value",
        "ZeroPad2d": "padding value",
        "ZeroPad3d": "padding value",
    },
    "pixelshuffle": {
        "PixelShuffle": "upscale_factor",
        "PixelUnshuffle": "downscale_factor",
    },
    "pooling": {
        "_MaxPoolNd": "kernel_size stride padding dilation return_indices ceil_mode",
        "MaxPool1d": "kernel_size stride padding dilation return_indices ceil_mode",
        "MaxPool2d": "kernel_size stride padding dilation return_indices ceil_mode",
        "MaxPool3d": "kernel_size stride padding dilation return_indices ceil_mode",
        "_AvgPoolNd": "kernel_size stride padding ceil_mode count_include_pad",
        "AvgPool1d": "kernel_size stride padding ceil_mode count_include_pad",
        "AvgPool2d": "kernel_size stride padding ceil_mode count_include_pad divisor_override",
        "AvgPool3d": "kernel_size stride padding ceil_mode count_include_pad divisor_override",
        "_LPPoolNd": "norm_type kernel_size stride ceil_mode",
        "LPPool1d": "norm_type kernel_size stride ceil_mode",
        "LPPool2d": "norm_type kernel_size stride ceil_mode",
        "LPPool3d": "norm_type kernel_size stride ceil_mode",
        "_AdaptiveMaxPoolNd": "output_size return_indices",
        "AdaptiveMaxPool1d": "output_size return_indices",
        "AdaptiveMaxPool2d": "output_size return_indices",
        "AdaptiveMaxPool3d": "output_size return_indices",
        "_AdaptiveAvgPoolNd": "output_size",
        "AdaptiveAvgPool1d": "output_size",
        "AdaptiveAvgPool2d": "output_size",
        "AdaptiveAvgPool3d": "output_size",
    },
    "rnn": {
        "RNNBase": "mode input_size hidden_size num_layers bias batch_first dropout bidirectional proj_size",
        "RNN": "mode input_size hidden_size num_layers bias batch_first dropout bidirectional proj_size",
        "LSTM": "mode input_size hidden_size num_layers bias batch_first dropout bidirectional proj_size",
        "GRU": "mode input_size hidden_size num_layers bias batch_first dropout bidirectional proj_size",
        "RNNCellBase": "input_size hidden_size bias",
        "RNNCell": "input_size hidden_size bias nonlinearity",
        "LSTMCell": "input_size hidden_size bias",
        "GRUCell": "input_size hidden_size bias",
    },
    "sparse": {
        "Embedding": "num_embeddings embedding_dim padding_idx max_norm norm_type scale_grad_by_freq sparse",
        "EmbeddingBag": ("num_embeddings embedding_dim max_norm norm_type scale_grad_by_freq mode sparse "
            "include_last_offset padding_idx"),
    },
    "transformer": {
        "TransformerEncoder": "norm",
        "TransformerDecoder": "norm",
        "TransformerEncoderLayer": "norm_first",
        "TransformerDecoderLayer": "norm_first",
    },
    "upsampling": {
        "Upsample": "size scale_factor mode align_corners name recompute_scale_factor",
        "UpsamplingNearest2d": "size scale_factor mode align_corners name recompute_scale_factor",
        "UpsamplingBilinear2d": "size scale_factor mode align_corners name recompute_scale_factor",
    },
    "channelshuffle": {
        "ChannelShuffle": "groups",
    },
}


def apply() -> None:
    """Give each class its own `__constants__` (its bases may differ from PyTorch's, so an
    inherited list is not relied on)."""
    for file, classes in CONSTANTS.items():
        module = importlib.import_module(f"eager.nn.modules.{file}")
        for name, names in classes.items():
            cls = getattr(module, name, None)
            if cls is not None:
                cls.__constants__ = names.split()
