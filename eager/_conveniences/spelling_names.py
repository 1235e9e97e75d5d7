"""The names `eager.<name>` resolves from `eager._conveniences.torch_spellings` on first use: that module
loads nn.functional, which `import eager` must not pay for (tests/test_import_contracts.py)."""
from __future__ import annotations

NN_SPELLINGS = frozenset((
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "bilinear",
    "cosine_similarity", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
    "pairwise_distance", "pdist", "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "avg_pool1d",
    "adaptive_avg_pool1d", "adaptive_max_pool1d", "dropout", "dropout_", "alpha_dropout", "alpha_dropout_",
    "feature_alpha_dropout", "feature_alpha_dropout_", "rrelu", "rrelu_", "layer_norm", "group_norm", "batch_norm",
    "instance_norm", "embedding", "kl_div", "binary_cross_entropy_with_logits", "cosine_embedding_loss",
    "hinge_embedding_loss", "margin_ranking_loss", "triplet_margin_loss", "poisson_nll_loss", "constant_pad_nd",
    "rms_norm", "ctc_loss", "feature_dropout", "feature_dropout_",
))
