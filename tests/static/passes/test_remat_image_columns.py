"""The remat split and an image-by-image convolution's columns (static.passes.remat.
_image_columns): for a backend that runs such convolutions as kernels making each image's
columns in cache (Capabilities.image_convolutions: native), the forward saves the image and
the backward makes the columns again; for the others the columns are saved (recomputing
them would be a second unfold pass). The split's forward lists only its own nodes among its
values' users."""
from test_pass_remat_memory import _joint

from eager.nn import functional as F
from static.passes import optimize_joint


def _conv_loss(x, w):
    return (F.conv2d(x, w, padding=1) ** 2).sum()


def _ops(graph) -> list:
    ops = []
    for n in graph.nodes:
        ops += _ops(n.body) if n.body is not None else [n.op]
    return ops


def _split(backend, channels=8):
    joint, primal, seeds = _joint(_conv_loss, (2, channels, 6, 6), (4, channels, 3, 3))  # K = 9 * channels
    split, stats = optimize_joint(joint, primal, seeds, 1, [], backend=backend)
    return split, stats


def test_a_kernel_backend_saves_the_image_and_makes_the_columns_again():
    split, stats = _split("native")
    assert all(len(v.type.shape) != 6 for v in split.residuals), [v.type for v in split.residuals]
    assert "unfold" in _ops(split.forward) and "unfold" in _ops(split.backward)
    other, other_stats = _split(None)
    assert any(len(v.type.shape) == 6 for v in other.residuals)
    assert "unfold" not in _ops(other.backward)
    assert stats["saved_bytes"] < other_stats["saved_bytes"]


def test_a_convolution_of_one_product_keeps_its_columns_saved():
    """K = 27 < 64: eager traces one (O, K) @ (K, N*L) product, not the image-by-image
    pattern, and no kernel takes it: the columns stay saved whatever the backend."""
    split, _ = _split("native", channels=3)
    assert any(len(v.type.shape) == 6 for v in split.residuals)


def test_the_forward_lists_only_its_own_nodes_as_users():
    split, _ = _split("native")
    own = {id(n) for n in split.forward.nodes}
    for node in split.forward.nodes:
        for v in node.outputs:
            assert all(id(u) in own for u in v.users), (node.op, [u.op for u in v.users])
    for v in split.forward.inputs:
        assert all(id(u) in own for u in v.users), [u.op for u in v.users]
