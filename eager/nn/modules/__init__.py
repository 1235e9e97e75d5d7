"""torch.nn.modules: the module classes, by the file PyTorch defines each in
(`eager.nn.modules.linear.Linear` is `eager.nn.Linear`)."""
from __future__ import annotations

from . import (  # noqa: F401
    activation,
    batchnorm,
    channelshuffle,
    container,
    conv,
    distance,
    dropout,
    flatten,
    fold,
    instancenorm,
    lazy,
    linear,
    loss,
    module,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
    utils,
)
from .activation import *  # noqa: F401,F403
from .batchnorm import *  # noqa: F401,F403
from .channelshuffle import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .fold import *  # noqa: F401,F403
from .instancenorm import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .module import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pixelshuffle import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403
