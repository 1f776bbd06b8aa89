"""A restricted unpickler for the Planetoid ``ind.<name>.*`` files.

Those files are Python 2 pickles of NumPy arrays, SciPy sparse matrices and a
``collections.defaultdict`` of lists. Plain :func:`pickle.load` would import and
call whatever a file names, so a crafted file could run code. This unpickler
resolves only the globals those files need and refuses any other with one line
naming the file; nothing from the file is called before the check.
"""
from __future__ import annotations

import io
import pickle
import warnings
from pathlib import Path
from typing import Any

from ...errors import DataFormatError

__all__ = []

_SPARSE = ("csr_matrix", "csc_matrix", "coo_matrix", "lil_matrix", "dok_matrix")
_BUILTINS = ("list", "dict", "int", "float", "tuple", "set", "object")

#: ``(module, name)`` pairs a Planetoid pickle may name (several spellings across
#: NumPy 1/2, SciPy < 1.8 / >= 1.8 and Python 2/3).
ALLOWED_GLOBALS: frozenset[tuple[str, str]] = frozenset(
    [(m, n) for m in ("numpy.core.multiarray", "numpy._core.multiarray") for n in ("_reconstruct", "scalar")]
    + [("numpy", "ndarray"), ("numpy", "dtype")]
    + [(m, n) for n in _SPARSE for m in ("scipy.sparse", f"scipy.sparse.{n[:3]}", f"scipy.sparse._{n[:3]}")]
    + [("collections", "defaultdict"), ("collections", "OrderedDict")]
    + [(m, n) for m in ("builtins", "__builtin__") for n in _BUILTINS]
    + [("copy_reg", "_reconstructor"), ("copyreg", "_reconstructor")]
    + [("_codecs", "encode")]  # how Python 3 writes bytes at protocol 2; it only converts text to bytes
)


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, file, path: Path) -> None:
        super().__init__(file, encoding="latin1")  # written by Python 2
        self.path = path

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in ALLOWED_GLOBALS:
            raise DataFormatError(
                f"{self.path}: refused to unpickle {module}.{name}; a Planetoid file holds only NumPy arrays, "
                "SciPy sparse matrices and dicts of lists. Download the file again from a source you trust"
            )
        return super().find_class(module, name)  # maps __builtin__/copy_reg to their Python 3 names


def load_planetoid_pickle(path: str | Path) -> Any:
    """The object pickled in ``path``, resolving only :data:`ALLOWED_GLOBALS`."""
    path = Path(path)
    data = path.read_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # old scipy module paths inside the pickles
        try:
            return _RestrictedUnpickler(io.BytesIO(data), path).load()
        except DataFormatError:
            raise
        except Exception as err:  # noqa: BLE001 - pickle raises many unrelated types on bad files
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise DataFormatError(f"{path}: cannot be unpickled ({reason}); download it again") from None
