"""The ``gflkit`` command line (installed as ``gflkit_cli``)."""
