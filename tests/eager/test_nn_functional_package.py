"""`eager.nn.functional` is a package of modules by family; its namespace is torch.nn.functional's.

The names below are every public function `eager.nn.functional` defined when it was one
module: splitting it by family must keep each reachable as `F.name`, the same object as in
its family module, and callable."""
import importlib

import pytest

import eager
import eager.nn.functional as F

PUBLIC_NAMES = """
    adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d
    adaptive_max_pool2d adaptive_max_pool3d affine_grid alpha_dropout avg_pool1d avg_pool2d
    avg_pool3d batch_norm bilinear binary_cross_entropy binary_cross_entropy_with_logits bool_dtype
    celu celu_ channel_shuffle conv1d conv2d conv3d conv_transpose1d conv_transpose2d
    conv_transpose3d cosine_embedding_loss cosine_similarity cross_entropy ctc_loss dropout
    dropout1d dropout2d dropout3d elu elu_ embedding embedding_bag feature_alpha_dropout fold
    gaussian_nll_loss gelu glu grid_sample group_norm gumbel_softmax hardshrink hardsigmoid
    hardswish hardtanh hardtanh_ hinge_embedding_loss huber_loss instance_norm interpolate kl_div
    l1_loss layer_norm leaky_relu leaky_relu_ linear local_response_norm log_sigmoid log_softmax
    logsigmoid lp_pool1d lp_pool2d margin_ranking_loss max_pool1d max_pool1d_with_indices max_pool2d
    max_pool2d_with_indices max_pool3d max_unpool1d max_unpool2d max_unpool3d mish mse_loss
    multi_margin_loss multilabel_margin_loss multilabel_soft_margin_loss native_channel_shuffle
    nll_loss normalize one_hot pad pairwise_distance pdist pixel_shuffle pixel_unshuffle
    poisson_nll_loss prelu relu relu6 relu_ rms_norm rrelu rrelu_ scaled_dot_product_attention selu
    selu_ sigmoid silu smooth_l1_loss soft_margin_loss softmax softmin softplus softshrink softsign
    tanh tanhshrink threshold threshold_ triplet_margin_loss triplet_margin_with_distance_loss
    unfold upsample upsample_bilinear upsample_nearest
""".split()

FAMILIES = ("activations", "dropouts", "linear_maps", "losses", "ctc", "normalization", "distances",
            "embeddings", "convolution", "pooling", "attention", "vision")


def test_every_public_name_is_still_exposed():
    missing = [n for n in PUBLIC_NAMES if not callable(getattr(F, n, None))]
    assert not missing, f"eager.nn.functional lost {missing}"


def test_each_name_comes_from_exactly_one_family_module():
    homes: dict[str, list[str]] = {}
    for family in FAMILIES:
        module = importlib.import_module(f"eager.nn.functional.{family}")
        for n in PUBLIC_NAMES:
            if getattr(module, n, None) is getattr(F, n) and getattr(F, n).__module__ == module.__name__:
                homes.setdefault(n, []).append(family)
    assert {n: h for n, h in homes.items() if len(h) != 1} == {}
    assert sorted(set(PUBLIC_NAMES) - set(homes)) == []


def test_function_names_do_not_shadow_family_modules():
    # `F.dropout` and `F.linear` are functions, as in torch, not the modules that hold them.
    assert F.dropout.__module__ == "eager.nn.functional.dropouts"
    assert F.linear.__module__ == "eager.nn.functional.linear_maps"
    x = eager.ones(2, 3)
    assert F.linear(x, eager.ones(4, 3)).shape == (2, 4)


def test_names_match_torch_where_torch_has_them():
    torch = pytest.importorskip("torch")
    ours_not_torch = [n for n in PUBLIC_NAMES if not hasattr(torch.nn.functional, n)]
    # the two extras: a dtype helper and the alias of logsigmoid that older torch had
    assert sorted(ours_not_torch) == ["bool_dtype", "log_sigmoid"]
