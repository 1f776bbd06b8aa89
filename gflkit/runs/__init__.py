"""Run folders and checkpoints: atomic save, resume state, provenance, listing.

``folder`` is one run's folder on disk (lock, hashes, atomic moves);
``checkpoints`` saves, loads, names and lists runs; ``states`` checks a saved
model state against a model before loading it.
"""
