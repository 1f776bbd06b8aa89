"""Small graphs shared by the tests of gflkit.nn."""
from __future__ import annotations

import networkx as nx
import pytest


@pytest.fixture
def six() -> nx.Graph:
    """A 6-node graph: a triangle 0-1-2 with a tail 2-3-4 and a pendant 5 on 1."""
    return nx.Graph([(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (1, 5)])


@pytest.fixture
def pair() -> list[nx.Graph]:
    """Two connected graphs of 15 and 11 nodes."""
    graphs = []
    for n, m, seed in ((15, 25, 5), (11, 17, 6)):
        g = nx.gnm_random_graph(n, m, seed=seed)
        g.add_edges_from((v, (v + 1) % n) for v in range(n) if g.degree(v) == 0)  # no isolated nodes
        graphs.append(g)
    return graphs
