"""Few-shot prediction and embeddings on a user's new graph, with its estimate.

``predictor`` holds a loaded run and labels a graph's nodes with the candidate
the labels support best; ``candidates`` are the methods (a run's model and those
fitted on the graph's own labels), ``selection`` cross-validates them and picks
one, ``per_graph`` offers the fitted ones as ``gflkit compare`` rows;
``class_scores`` scores query nodes against the support of each class with a
run's model; ``diagnostics`` tells what the labels are worth (accuracy estimate,
feature shift, collapse); ``inputs`` reads graphs and labels, ``checks`` checks
them and shapes the output; ``functions`` is ``gflkit predict`` and ``gflkit
embed`` as functions.
"""
