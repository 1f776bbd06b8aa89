"""gflkit: Graph Few-shot Learning (Yao et al., AAAI 2020) on DGL and PyTorch."""
from . import _compat  # noqa: F401  (must run before the first `import dgl`)

__version__ = "0.2.0.dev0"

from .api import evaluate, evaluate_baseline, model_config, train  # noqa: E402
from .config import EpisodeConfig, GFLConfig, TrainConfig  # noqa: E402
from .data import GraphCollection, load_collection  # noqa: E402
from .errors import GFLError  # noqa: E402
from .prediction import embed, load, predict  # noqa: E402

__all__ = [
    "train", "evaluate", "evaluate_baseline", "model_config", "GFLConfig", "EpisodeConfig",
    "TrainConfig", "GraphCollection", "load_collection", "GFLError", "load", "predict", "embed", "__version__",
]
