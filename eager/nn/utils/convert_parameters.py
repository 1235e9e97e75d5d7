"""torch.nn.utils.convert_parameters: parameters_to_vector / vector_to_parameters."""
from __future__ import annotations

from . import parameters_to_vector, vector_to_parameters

__all__ = ["parameters_to_vector", "vector_to_parameters"]
