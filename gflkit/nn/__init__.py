"""Building blocks of GFL, each usable and testable on its own."""
from .autoencoder import GraphDecoder, dense_recon_loss, recon_loss
from .distance import logits
from .conv import GCNLayer
from .encoder import GCNEncoder
from .gate import HierarchyGate
from .hierarchy import HierarchicalGraphRepresentation
from .prototype import PrototypeGNN
from .relation import relation_graph, relation_weights, support_similarity

__all__ = [
    "GCNEncoder", "GraphDecoder", "recon_loss", "dense_recon_loss", "support_similarity",
    "relation_weights", "relation_graph", "PrototypeGNN", "HierarchicalGraphRepresentation",
    "HierarchyGate", "logits", "GCNLayer",
]
