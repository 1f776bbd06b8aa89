"""Few-shot prediction and embeddings on a user's new graph, with its estimate.

``predictor`` loads a run and labels a new graph's nodes; ``class_scores``
scores query nodes against the support of each class; ``diagnostics`` tells
what the labels are worth (accuracy estimate, feature shift, collapse).
"""
