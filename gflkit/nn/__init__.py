"""Building blocks of GFL, each usable and testable on its own."""
from .autoencoder import GraphDecoder, dense_recon_loss, recon_loss
from .distance import Distance, logits
from .conv import GCNLayer
from .encoder import GCNEncoder, NodeEncoder, make_encoder, register_encoder
from .gate import HierarchyGate
from .hierarchy import HierarchicalGraphRepresentation
from .prototype import GraphPrototype, MeanPrototype, PrototypeGNN
from .relation import relation_graph, relation_weights, support_similarity

__all__ = [
    "GCNEncoder", "GraphDecoder", "recon_loss", "dense_recon_loss", "support_similarity",
    "relation_weights", "relation_graph", "PrototypeGNN", "HierarchicalGraphRepresentation",
    "HierarchyGate", "logits", "GCNLayer", "NodeEncoder", "make_encoder", "register_encoder", "GraphPrototype",
    "MeanPrototype", "Distance",
]
