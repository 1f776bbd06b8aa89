"""Models: GFL and the baselines it is compared with."""
from .gfl import GFL, GFLOutput, prepare_graph, batch_episodes

__all__ = ["GFL", "GFLOutput", "prepare_graph", "batch_episodes"]
