"""Graphs as the model sees them and dense references, shared by the tests of gflkit.nn."""
from __future__ import annotations

import dgl
import networkx as nx
import numpy as np
import torch

from gflkit.data import build_graph
from gflkit.graphs import prepare_graph


def _model_graph(nxg: nx.Graph, feat_size: int = 4, seed: int = 0) -> dgl.DGLGraph:
    """``nxg`` as the model sees it: simple, symmetric, one self-loop per node."""
    n = nxg.number_of_nodes()
    edges = list(nxg.edges()) or [(0, 0)]
    src, dst = zip(*edges)
    feat = torch.from_numpy(np.random.default_rng(seed).standard_normal((n, feat_size)).astype(np.float32))
    return prepare_graph(build_graph(src, dst, n, feat, torch.zeros(n, dtype=torch.long)))


def _adj(nxg: nx.Graph) -> torch.Tensor:
    """Binary adjacency without self-loops."""
    return torch.tensor(nx.to_numpy_array(nxg, nodelist=range(nxg.number_of_nodes())), dtype=torch.float32)


def _gcn_norm(adj: torch.Tensor) -> torch.Tensor:
    """``D^-1/2 (A + I) D^-1/2``."""
    a = adj + torch.eye(adj.shape[0])
    d = a.sum(1).rsqrt()
    return d[:, None] * a * d[None, :]
