"""Models: GFL and the baselines it is compared with."""
from .gfl import GFL, GFLOutput

__all__ = ["GFL", "GFLOutput"]
