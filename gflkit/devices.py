"""Where the model computes: ``cpu`` or a CUDA device, checked before any work starts.

PyPI's DGL wheels are CPU-only builds; computing on a GPU needs a CUDA build of
torch *and* of DGL (from DGL's own wheel index). :func:`resolve_device` turns
``--device`` into a :class:`torch.device` or a one-line error that says which
of the two is missing and what to install.

It also says how many processes and threads this machine takes: the cores it
gives this process, and the limit on them. Importing it loads neither torch
nor DGL (they are imported where a device is resolved), so the command line
checks its options with it as it parses them.
"""
from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from .errors import GFLError
from .names import GFL_MODELS

if TYPE_CHECKING:
    import torch

__all__ = []

#: DGL's wheel index; CUDA builds live under ``torch-<major.minor>/cu<version>/``.
DGL_WHEELS = "https://data.dgl.ai/wheels"


def dgl_cuda_build() -> bool:
    """Whether the installed DGL was built with CUDA (its C library registers a GPU device API)."""
    import dgl  # noqa: F401  (through gflkit's compat layer)
    from dgl._ffi.function import get_global_func

    return get_global_func("device_api.gpu", allow_missing=True) is not None


def _dgl_wheel_hint() -> str:
    """The ``pip install`` line of the DGL build that matches this torch."""
    import torch

    torch_minor = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    cuda = torch.version.cuda
    if cuda is None:
        return (f"install a CUDA build of torch first, then the matching CUDA build of DGL "
                f"(pip install dgl -f {DGL_WHEELS}/torch-<torch version>/cu<CUDA version>/repo.html)")
    tag = "cu" + "".join(cuda.split(".")[:2])
    return f"install DGL's CUDA build: pip install dgl -f {DGL_WHEELS}/torch-{torch_minor}/{tag}/repo.html"


#: The CUDA devices found to work in this process, by name: each is checked once per process
#: (a command resolves its device where it parses the option, in its run's settings and in the
#: training function; the answer cannot change while the process runs). Failures are not kept.
_WORKING: dict[str, torch.device] = {}


def resolve_device(device: str | torch.device | None, option: str = "device") -> torch.device:
    """``cpu``, ``cuda`` or ``cuda:N`` as a :class:`torch.device`, once it is known to work here.

    A CUDA device is checked the first time it is named; later calls return the same answer.

    Args:
        device: the device name (``None``: ``cpu``).
        option: the parameter that names the device, for the error message.

    Raises:
        GFLError: an unknown name, a DGL or torch without CUDA, or a GPU index
            this machine does not have.
    """
    import torch

    if device is None:
        return torch.device("cpu")
    name = str(device)
    if not re.fullmatch(r"cpu|cuda(:\d+)?", name):
        raise GFLError(f"`{option}={name}`: choose cpu, cuda or cuda:N")
    if name == "cpu":
        return torch.device("cpu")
    if name in _WORKING:
        return _WORKING[name]
    import dgl

    if not dgl_cuda_build():
        raise GFLError(f"`{option}={name}`: the installed DGL {dgl.__version__} is a CPU-only build (PyPI has no "
                       f"CUDA build of DGL 2.x); {_dgl_wheel_hint()}, or use `{option}=cpu`")
    if not torch.cuda.is_available():
        raise GFLError(f"`{option}={name}`: torch {torch.__version__} sees no CUDA device; install a CUDA build of "
                       f"torch on a machine with a GPU, or use `{option}=cpu`")
    dev = torch.device(name)
    if dev.index is not None and dev.index >= torch.cuda.device_count():
        raise GFLError(f"`{option}={name}`: this machine has {torch.cuda.device_count()} CUDA device(s), "
                       f"numbered from 0")
    _WORKING[name] = dev
    return dev


def require_cpu(name: str, device: torch.device) -> None:
    """Only GFL models compute on a GPU: a one-line error when the model ``name`` is given another device."""
    if device.type != "cpu":
        raise GFLError(f"`device={device}`: only GFL models ({', '.join(GFL_MODELS)}) run on a GPU; {name} runs on "
                       f"the CPU (leave `device` out)")


def module_device(module: torch.nn.Module) -> torch.device:
    """The device of a module's first parameter (``cpu`` for a module without any)."""
    import torch

    for p in module.parameters():
        return p.device
    return torch.device("cpu")

#: Processes, or threads per process, a command may start per usable core: a few times the cores still
#: repeats a run made on a larger machine; far more would only exhaust memory and the process table.
PER_CORE = 4


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it, else the CPU count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def worker_limit() -> int:
    """The most processes (or threads per process) :func:`check_workers` accepts: :data:`PER_CORE` per usable core."""
    return PER_CORE * usable_cores()


def check_workers(count: int, name: str) -> int:
    """``count`` when it is at most :func:`worker_limit`.

    Raises:
        GFLError: naming the parameter ``name`` and the cores of this machine.
    """
    if count > worker_limit():
        raise GFLError(f"{name}={count} is more than {PER_CORE} per core of the {usable_cores()} usable cores "
                       f"of this machine (at most {worker_limit()}); give fewer")
    return count
