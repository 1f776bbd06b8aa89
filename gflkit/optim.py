"""Adam for the training loop, computed as ``torch.optim.Adam`` computes it.

``torch.optim``'s optimizers import ``torch._dynamo`` the first time one is
built or stepped (their methods are wrapped to keep the compiler out), about a
second on the 2-core machine, longer than many of gflkit's runs spend in the
optimizer altogether. :class:`Adam` takes the same steps without that
machinery: the updates of ``torch.optim.Adam``'s default CPU path, one
``torch._foreach_*`` call per operation for all parameters, and the same
``state_dict`` format, so checkpoints written with either load in the other.
The results equal ``torch.optim.Adam``'s to the last bit (tested).
"""
from __future__ import annotations

from typing import Any, Iterable

import torch

__all__ = ["Adam"]

#: The settings ``torch.optim.Adam`` records in a parameter group besides the
#: learning rate, betas, eps and weight decay, at the values this class implements.
_FIXED = {"amsgrad": False, "maximize": False, "foreach": None, "capturable": False, "differentiable": False,
          "fused": None, "decoupled_weight_decay": False}


class Adam:
    """Adam (Kingma and Ba, 2015) with L2 weight decay, as ``torch.optim.Adam(params, lr, betas, eps, weight_decay)``.

    Args:
        params: the parameters to optimise (one group).
        lr: learning rate.
        betas: decay rates of the first and second moment estimates.
        eps: added to the denominator.
        weight_decay: L2 penalty added to the gradients.

    Attributes:
        param_groups: one group, a dict with the settings and ``params``, as in ``torch.optim``.
        state: per parameter, ``step`` (a float tensor), ``exp_avg`` and ``exp_avg_sq``.
    """

    def __init__(self, params: Iterable[torch.Tensor], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0) -> None:
        params = list(params)
        if not params:
            raise ValueError("Adam got no parameters to optimise")
        if lr < 0 or eps < 0 or weight_decay < 0 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"invalid Adam settings: lr={lr}, betas={betas}, eps={eps}, weight_decay={weight_decay}")
        self.param_groups = [{"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay, **_FIXED,
                              "params": params}]
        self.state: dict[torch.Tensor, dict[str, torch.Tensor]] = {}

    def __repr__(self) -> str:
        group = self.param_groups[0]
        return (f"Adam(lr={group['lr']}, betas={group['betas']}, eps={group['eps']}, "
                f"weight_decay={group['weight_decay']}, params={len(group['params'])})")

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the parameters' gradients (``None``, or zeros with ``set_to_none=False``)."""
        for p in self.param_groups[0]["params"]:
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.detach_().zero_()

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient."""
        group = self.param_groups[0]
        lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            return
        if any(p.grad.is_sparse for p in params):
            raise RuntimeError("Adam does not take sparse gradients")
        for p in params:
            if p not in self.state:
                self.state[p] = {"step": torch.tensor(0.0), "exp_avg": torch.zeros_like(p),
                                 "exp_avg_sq": torch.zeros_like(p)}
        states = [self.state[p] for p in params]
        grads = [p.grad for p in params]
        exp_avgs = [s["exp_avg"] for s in states]
        exp_avg_sqs = [s["exp_avg_sq"] for s in states]
        steps = [s["step"] for s in states]
        torch._foreach_add_(steps, 1.0)
        if decay != 0:
            grads = torch._foreach_add(grads, params, alpha=decay)
        torch._foreach_lerp_(exp_avgs, grads, 1 - beta1)
        torch._foreach_mul_(exp_avg_sqs, beta2)
        torch._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
        # Parameters added at different times may have taken different numbers of
        # steps: each distinct count gets its bias corrections.
        counts = [float(s) for s in steps]
        for count in sorted(set(counts)):
            idx = [i for i, c in enumerate(counts) if c == count]
            step_size = lr / (1 - beta1**count)
            denom = torch._foreach_sqrt([exp_avg_sqs[i] for i in idx])
            torch._foreach_div_(denom, (1 - beta2**count) ** 0.5)
            torch._foreach_add_(denom, eps)
            torch._foreach_addcdiv_([params[i] for i in idx], [exp_avgs[i] for i in idx], denom, -step_size)

    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [...]}``, the format of ``torch.optim.Adam``
        (tensors are the optimizer's own, not copies)."""
        group = self.param_groups[0]
        index = {id(p): i for i, p in enumerate(group["params"])}
        state = {index[id(p)]: dict(s) for p, s in self.state.items()}
        return {"state": dict(sorted(state.items())),
                "param_groups": [{**{k: v for k, v in group.items() if k != "params"},
                                  "params": list(range(len(group["params"])))}]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Continue from a :meth:`state_dict` (also one of ``torch.optim.Adam`` with the same parameters).

        Raises:
            ValueError: when it describes other parameters or settings this class does not implement.
        """
        try:
            groups, saved = list(state_dict["param_groups"]), dict(state_dict["state"])
            ids = [int(i) for i in groups[0]["params"]] if len(groups) == 1 else None
        except (KeyError, TypeError, ValueError, IndexError):
            raise ValueError("not an optimizer state: it needs 'state' and 'param_groups'") from None
        params = self.param_groups[0]["params"]
        if ids is None or len(ids) != len(params):
            raise ValueError(f"the optimizer state has {len(groups)} parameter groups"
                             + ("" if ids is None else f" of {len(ids)} parameters") + f", not one of {len(params)}")
        unsupported = [k for k, v in _FIXED.items() if k in groups[0] and groups[0][k] not in (v, None, False)]
        if unsupported:
            raise ValueError(f"the optimizer state uses Adam settings gflkit does not implement: {', '.join(unsupported)}")
        position = {i: n for n, i in enumerate(ids)}
        state: dict[torch.Tensor, dict[str, torch.Tensor]] = {}
        for i, entry in saved.items():
            try:
                p = params[position[int(i)]]
                step, moments = entry["step"], (entry["exp_avg"], entry["exp_avg_sq"])
                step = step.detach().clone().float().cpu() if torch.is_tensor(step) else torch.tensor(float(step))
            except (KeyError, TypeError, ValueError, RuntimeError):
                raise ValueError(f"the optimizer state of parameter {i!r} is not Adam's") from None
            for m in moments:
                if not torch.is_tensor(m) or m.shape != p.shape:
                    got = tuple(m.shape) if torch.is_tensor(m) else f"a {type(m).__name__}"
                    raise ValueError(f"the optimizer state of parameter {i} is {got}, which does not have the "
                                     f"parameter's shape {tuple(p.shape)}")
            state[p] = {"step": step, "exp_avg": moments[0].detach().to(p, copy=True),
                        "exp_avg_sq": moments[1].detach().to(p, copy=True)}
        group = dict(self.param_groups[0])
        try:
            for key in ("lr", "eps", "weight_decay"):
                group[key] = float(groups[0].get(key, group[key]))
            group["betas"] = tuple(float(b) for b in groups[0].get("betas", group["betas"]))
        except (TypeError, ValueError):
            raise ValueError("the optimizer state's settings (lr, betas, eps, weight_decay) are not numbers") from None
        if len(group["betas"]) != 2:
            raise ValueError(f"the optimizer state's betas are {group['betas']}, not two numbers")
        self.param_groups[0] = group
        self.state = state
