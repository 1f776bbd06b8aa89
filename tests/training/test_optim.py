"""The training loop's optimizer: torch.optim.Adam by default, a caller's own on request, and
resume checkpoints whose optimizer state loads with ``weights_only=True``."""
from __future__ import annotations

import pytest
import torch

from gflkit.config import EpisodeConfig, TrainConfig
from gflkit.training.meta import meta_train

EPISODES, STEPS = EpisodeConfig(k_shot=3), TrainConfig(steps=3, eval_every=3, meta_batch=2)


def _weights(result) -> list[torch.Tensor]:
    return [p.detach().clone() for p in result.model.parameters()]


def test_training_takes_torch_adam_steps_unless_given_another_optimizer(small_family):
    plain = meta_train(small_family, episode_cfg=EPISODES, train_cfg=STEPS, progress=False)
    made = []

    own = STEPS.for_model("gfl")  # the learning rate and weight decay GFL trains with when none are given

    def adam(params):
        made.append(torch.optim.Adam(params, lr=own.lr, weight_decay=own.weight_decay))
        return made[-1]

    same = meta_train(small_family, episode_cfg=EPISODES, train_cfg=STEPS, progress=False, optimizer=adam)
    assert len(made) == 1 and {id(p) for p in made[0].param_groups[0]["params"]} == {
        id(p) for p in same.model.parameters()}
    assert all(torch.equal(a, b) for a, b in zip(_weights(plain), _weights(same)))  # the default, to the last bit
    sgd = meta_train(small_family, episode_cfg=EPISODES, train_cfg=STEPS, progress=False,
                     optimizer=lambda params: torch.optim.SGD(params, lr=0.1))
    assert any(not torch.equal(a, b) for a, b in zip(_weights(plain), _weights(sgd)))


def _old_state(opt: torch.optim.Adam) -> dict:
    """The optimizer state as resume checkpoints before this change held it (gflkit's former
    Adam wrote torch.optim.Adam's format: float step tensors, every group setting)."""
    group = opt.param_groups[0]
    settings = {"lr": group["lr"], "betas": tuple(group["betas"]), "eps": group["eps"],
                "weight_decay": group["weight_decay"], "amsgrad": False, "maximize": False, "foreach": None,
                "capturable": False, "differentiable": False, "fused": None, "decoupled_weight_decay": False}
    state = {i: {"step": torch.tensor(float(opt.state[p]["step"])), "exp_avg": opt.state[p]["exp_avg"].clone(),
                 "exp_avg_sq": opt.state[p]["exp_avg_sq"].clone()} for i, p in enumerate(group["params"])}
    return {"state": state, "param_groups": [{**settings, "params": list(range(len(group["params"])))}]}


def test_an_older_resume_checkpoints_optimizer_state_loads_and_continues_alike(tmp_path):
    from gflkit.training.loop import LoopState

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    opt = torch.optim.Adam(model.parameters(), lr=0.05, weight_decay=1e-3)
    gen = torch.Generator().manual_seed(1)

    def step(m, o):
        o.zero_grad()
        m(torch.randn(8, 4, generator=gen)).square().sum().backward()
        o.step()

    for _ in range(3):
        step(model, opt)
    ckpt = LoopState(step=3).checkpoint(model, opt)
    ckpt["optimizer"] = _old_state(opt)
    torch.save(ckpt, tmp_path / "last.pt")
    loaded = torch.load(tmp_path / "last.pt", weights_only=True)
    other = torch.nn.Linear(4, 3)
    other_opt = torch.optim.Adam(other.parameters(), lr=0.5)  # the settings come from the state
    assert LoopState.restore(loaded, other, other_opt).step == 3
    assert other_opt.param_groups[0]["lr"] == 0.05
    state = gen.get_state()
    step(model, opt)
    gen.set_state(state)
    step(other, other_opt)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), other.parameters()))


def test_a_resume_checkpoint_whose_optimizer_state_does_not_fit_is_one_line():
    from gflkit.errors import GFLError
    from gflkit.training.loop import LoopState

    model = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(model.parameters())
    good = LoopState(step=4).checkpoint(model, opt)
    restored = LoopState.restore(good, model, opt)
    assert restored.step == 4
    other = torch.nn.Linear(3, 5)
    wrong = {**good, "optimizer": {"state": {}, "param_groups": [{"params": [0]}]}}
    cases = [
        (wrong, "the optimizer state does not fit the model .*parameter group"),
        ({**good, "model": other.state_dict()},
         r"wrong shape: weight is \(5, 3\) in the file and \(2, 3\) in the model"),
        ({**good, "best_state": other.state_dict()},
         r"the kept weights \(best_state\) do not fit the model .*wrong shape"),
        ({k: v for k, v in good.items() if k != "rng"}, "not a complete resume checkpoint"),
    ]
    for ckpt, message in cases:
        with pytest.raises(GFLError, match=message) as err:
            LoopState.restore({**ckpt, "source": "runs/.x.partial/last.pt"}, model,
                              torch.optim.Adam(model.parameters()))
        assert str(err.value).startswith("runs/.x.partial/last.pt: ") and "start a fresh run" in str(err.value)
        assert "\n" not in str(err.value) and "\\n" not in str(err.value)
