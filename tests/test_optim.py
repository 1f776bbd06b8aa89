"""gflkit.optim.Adam against torch.optim.Adam: the same steps, bit for bit, and the same state format."""
from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from gflkit.config import GFLConfig
from gflkit.models import GFL
from gflkit.optim import Adam


def _pair(**settings):
    torch.manual_seed(0)
    ours, theirs = GFL(16, GFLConfig()), GFL(16, GFLConfig())
    theirs.load_state_dict(ours.state_dict())
    return ours, Adam(ours.parameters(), **settings), theirs, torch.optim.Adam(theirs.parameters(), **settings)


def _steps(pairs, start: int, count: int) -> None:
    """The same random gradients to both models; some parameters skip some steps."""
    gen = torch.Generator().manual_seed(start)
    for step in range(start, start + count):
        for model, opt in pairs:
            opt.zero_grad()
        for params in zip(*(m.parameters() for m, _ in pairs)):
            grad = torch.randn(params[0].shape, generator=gen)
            if step % 5 == 2 and params[0].dim() == 1:
                continue  # no gradient this step: the parameter is left alone
            for p in params:
                p.grad = grad.clone()
        for _, opt in pairs:
            opt.step()


def _same(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))


@pytest.mark.parametrize("settings", [dict(lr=0.01), dict(lr=0.003, betas=(0.8, 0.99), eps=1e-6, weight_decay=1e-3)])
def test_same_steps_as_torch_adam(settings):
    ours, opt, theirs, ref = _pair(**settings)
    _steps([(ours, opt), (theirs, ref)], 0, 25)
    assert _same(ours, theirs)
    assert any(not torch.equal(p, q) for p, q in zip(ours.parameters(), GFL(16, GFLConfig()).parameters()))
    steps = {float(s["step"]) for s in opt.state.values()}
    assert steps == {float(s["step"]) for s in ref.state.values()} and len(steps) == 2  # skipped steps counted apart


def test_state_dicts_load_both_ways():
    ours, opt, theirs, ref = _pair(lr=0.01, weight_decay=1e-4)
    _steps([(ours, opt), (theirs, ref)], 0, 6)
    mine, torchs = opt.state_dict(), ref.state_dict()
    assert mine["param_groups"] == torchs["param_groups"]
    assert mine["state"].keys() == torchs["state"].keys()
    # continue each model with the other's optimizer state
    swapped_ours = Adam(ours.parameters(), lr=0.5)  # the settings come from the state
    swapped_ours.load_state_dict(torchs)
    swapped_theirs = torch.optim.Adam(theirs.parameters(), lr=0.5)
    swapped_theirs.load_state_dict(mine)
    _steps([(ours, swapped_ours), (theirs, swapped_theirs)], 6, 6)
    assert swapped_ours.param_groups[0]["lr"] == 0.01
    assert _same(ours, theirs)


def test_zero_grad_and_errors():
    model = torch.nn.Linear(3, 2)
    opt = Adam(model.parameters())
    model(torch.ones(1, 3)).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert torch.count_nonzero(model.weight.grad) == 0
    opt.zero_grad()
    assert model.weight.grad is None
    opt.step()  # nothing to do without gradients
    assert not opt.state
    with pytest.raises(ValueError, match="no parameters"):
        Adam([])
    with pytest.raises(ValueError, match="invalid Adam settings"):
        Adam(model.parameters(), betas=(0.9, 1.0))
    other = Adam(torch.nn.Linear(3, 5).parameters())
    for p in other.param_groups[0]["params"]:
        p.grad = torch.ones_like(p)
    other.step()
    bad = [
        ({}, "needs 'state'"),
        (other.state_dict(), "does not have the parameter's shape"),
        ({"state": {}, "param_groups": [{"params": [0]}]}, "not one of 2"),
        ({"state": {0: {"step": 1}}, "param_groups": [{"params": [0, 1]}]}, "not Adam's"),
        ({"state": {}, "param_groups": [{"params": [0, 1], "amsgrad": True}]}, "amsgrad"),
        ({"state": {}, "param_groups": [{"params": [0, 1], "lr": "fast"}]}, "not numbers"),
    ]
    for state, message in bad:
        with pytest.raises(ValueError, match=message):
            opt.load_state_dict(state)


def test_training_does_not_import_the_compiler(small_family_dir):
    """torch.optim's optimizers import torch._dynamo (about a second); meta-training does not."""
    code = (
        "import sys\nimport gflkit.training\n"
        "from gflkit.data import GraphCollection\n"
        "from gflkit.config import TrainConfig\n"
        f"gflkit.training.meta_train(GraphCollection.load({str(small_family_dir)!r}), "
        "train_cfg=TrainConfig(steps=3, eval_every=2, meta_batch=2), progress=False)\n"
        "assert 'torch._dynamo' not in sys.modules, 'torch._dynamo was imported'\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


def test_a_resume_checkpoint_whose_optimizer_state_does_not_fit_is_one_line():
    from gflkit.errors import GFLError
    from gflkit.loop import LoopState

    model = torch.nn.Linear(3, 2)
    opt = Adam(model.parameters())
    good = LoopState(step=4).checkpoint(model, opt)
    restored = LoopState.restore(good, model, opt)
    assert restored.step == 4
    other = torch.nn.Linear(3, 5)
    wrong = {**good, "optimizer": {"state": {}, "param_groups": [{"params": [0]}]}}
    cases = [
        (wrong, "the optimizer state does not fit the model .*not one of 2"),
        ({**good, "model": other.state_dict()},
         r"wrong shape: weight is \(5, 3\) in the file and \(2, 3\) in the model"),
        ({**good, "best_state": other.state_dict()},
         r"the kept weights \(best_state\) do not fit the model .*wrong shape"),
        ({k: v for k, v in good.items() if k != "rng"}, "not a complete resume checkpoint"),
    ]
    for ckpt, message in cases:
        with pytest.raises(GFLError, match=message) as err:
            LoopState.restore({**ckpt, "source": "runs/.x.partial/last.pt"}, model, Adam(model.parameters()))
        assert str(err.value).startswith("runs/.x.partial/last.pt: ") and "start a fresh run" in str(err.value)
        assert "\n" not in str(err.value) and "\\n" not in str(err.value)
