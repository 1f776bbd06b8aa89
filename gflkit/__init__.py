"""gflkit: Graph Few-shot Learning (Yao et al., AAAI 2020) on DGL and PyTorch."""
from . import _compat  # noqa: F401  (must run before the first `import dgl`)

__version__ = "0.1.0"
