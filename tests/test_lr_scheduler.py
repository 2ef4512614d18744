"""ember.optim.lr_scheduler against torch.optim.lr_scheduler: every scheduler's learning rates (and cycled
momenta) bit for bit for 40 steps, state dicts (keys, round trips), step(epoch), warnings and errors."""
import copy
import warnings

import pytest

import ember
from parity import same

torch = pytest.importorskip("torch")

STEPS = 40


def make_opt(lib, opt="SGD", groups=2):
    ps = [lib.zeros(2, requires_grad=True) for _ in range(groups)]
    kw = dict(momentum=0.9) if opt == "SGD" else {}
    return getattr(lib.optim, opt)([{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(ps)], **kw)


def S(lib):
    return lib.optim.lr_scheduler


class Halve:
    """A callable object as lr_lambda: its __dict__ is what the state dict saves."""

    def __init__(self):
        self.base = 0.9

    def __call__(self, epoch):
        return self.base ** epoch


CASES = {
    "StepLR": lambda lib, o: S(lib).StepLR(o, 3, 0.5),
    "MultiStepLR": lambda lib, o: S(lib).MultiStepLR(o, [2, 5, 5, 9], 0.3),
    "ConstantLR": lambda lib, o: S(lib).ConstantLR(o, 0.25, 7),
    "LinearLR": lambda lib, o: S(lib).LinearLR(o, 0.1, 0.9, 13),
    "ExponentialLR": lambda lib, o: S(lib).ExponentialLR(o, 0.93),
    "PolynomialLR": lambda lib, o: S(lib).PolynomialLR(o, 17, 2.5),
    "CosineAnnealingLR": lambda lib, o: S(lib).CosineAnnealingLR(o, 7, 0.01),
    "CosineAnnealingWarmRestarts": lambda lib, o: S(lib).CosineAnnealingWarmRestarts(o, 3, 2, 0.001),
    "CosineAnnealingWarmRestarts-1": lambda lib, o: S(lib).CosineAnnealingWarmRestarts(o, 4),
    "LambdaLR": lambda lib, o: S(lib).LambdaLR(o, lambda e: 0.95 ** e + 0.1 * (e % 3)),
    "LambdaLR-object": lambda lib, o: S(lib).LambdaLR(o, [Halve(), lambda e: 1 / (e + 1)]),
    "MultiplicativeLR": lambda lib, o: S(lib).MultiplicativeLR(o, lambda e: 0.97),
    "OneCycleLR": lambda lib, o: S(lib).OneCycleLR(o, [1.0, 2.0], total_steps=STEPS + 1),
    "OneCycleLR-3phase-linear": lambda lib, o: S(lib).OneCycleLR(o, 1.0, epochs=5, steps_per_epoch=9,
                                                                 three_phase=True, anneal_strategy="linear"),
    "OneCycleLR-nomomentum": lambda lib, o: S(lib).OneCycleLR(o, 0.5, total_steps=STEPS, pct_start=0.25,
                                                              cycle_momentum=False, div_factor=10.0),
    "CyclicLR": lambda lib, o: S(lib).CyclicLR(o, 0.01, 0.1, step_size_up=4),
    "CyclicLR-triangular2": lambda lib, o: S(lib).CyclicLR(o, 0.01, 0.1, step_size_up=4, step_size_down=6,
                                                           mode="triangular2"),
    "CyclicLR-exp_range": lambda lib, o: S(lib).CyclicLR(o, [0.01, 0.02], 0.1, step_size_up=5, mode="exp_range",
                                                         gamma=0.97),
    "CyclicLR-scale_fn": lambda lib, o: S(lib).CyclicLR(o, 0.01, 0.1, step_size_up=3,
                                                        scale_fn=lambda x: 1 / (x + 1), scale_mode="iterations"),
    "SequentialLR": lambda lib, o: S(lib).SequentialLR(
        o, [S(lib).LinearLR(o, 0.2, 1.0, 5), S(lib).CosineAnnealingLR(o, 10), S(lib).ExponentialLR(o, 0.9)],
        [5, 20]),
    "ChainedScheduler": lambda lib, o: S(lib).ChainedScheduler([S(lib).ConstantLR(o, 0.5, 4),
                                                                S(lib).ExponentialLR(o, 0.9)]),
}
ADAM_CASES = ("OneCycleLR", "CyclicLR-exp_range", "CosineAnnealingLR")


def metric(i):
    return [5, 4, 4, 4, 4, 4, 3.9, 4, 4, 4, 4, 4, 4, 4][i % 14]


def plateau(lib, o):
    return S(lib).ReduceLROnPlateau(o, patience=2, cooldown=1, factor=0.5, min_lr=[0.01, 0.02])


def run(lib, build, steps=STEPS, opt="SGD", sched=None, o=None, start=0):
    o = o or make_opt(lib, opt)
    s = sched or build(lib, o)
    out = [list(s.get_last_lr())]
    for i in range(start, start + steps):
        o.step()
        if isinstance(s, S(lib).ReduceLROnPlateau):
            s.step(metric(i))
        else:
            s.step()
        # The learning rates and the momenta / beta1 the cycling schedulers write.
        out.append(list(s.get_last_lr()) + [g.get("momentum", g.get("betas", [None])[0]) for g in o.param_groups])
    return out, s, o


ALL = dict(CASES, ReduceLROnPlateau=plateau)


@pytest.mark.parametrize("name", list(ALL))
def test_lrs_match_torch_bit_for_bit(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lt, st, _ = run(torch, ALL[name])
        le, se, _ = run(ember, ALL[name])
        assert le == lt
        assert sorted(se.state_dict()) == sorted(st.state_dict())
        if name in ADAM_CASES:
            assert run(ember, ALL[name], opt="Adam")[0] == run(torch, ALL[name], opt="Adam")[0]


@pytest.mark.parametrize("name", list(ALL))
def test_state_dict_round_trip(name):
    """Save scheduler and optimizer after 15 steps, load them into fresh ones, continue: the same rates."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full, _, _ = run(ember, ALL[name])
        first, s, o = run(ember, ALL[name], steps=15)
        sd_s, sd_o = copy.deepcopy(s.state_dict()), copy.deepcopy(o.state_dict())
        o2 = make_opt(ember)
        s2 = ALL[name](ember, o2)
        o2.load_state_dict(sd_o)
        s2.load_state_dict(sd_s)
        rest, _, _ = run(ember, None, steps=STEPS - 15, sched=s2, o=o2, start=15)
        assert first + rest[1:] == full


def test_closed_form_with_epoch_argument():
    def f(lib):
        out = []
        for build in (lambda o: S(lib).StepLR(o, 3, 0.5), lambda o: S(lib).MultiStepLR(o, [2, 4], 0.5),
                      lambda o: S(lib).ExponentialLR(o, 0.9), lambda o: S(lib).CosineAnnealingLR(o, 10, 0.01),
                      lambda o: S(lib).LinearLR(o, 0.2, 1.0, 6), lambda o: S(lib).PolynomialLR(o, 8, 2.0),
                      lambda o: S(lib).ConstantLR(o, 0.5, 3), lambda o: S(lib).CosineAnnealingWarmRestarts(o, 3, 2)):
            o = make_opt(lib)
            s = build(o)
            for epoch in (3, 7, 5, 12, 1.5 if isinstance(s, S(lib).CosineAnnealingWarmRestarts) else 2):
                o.step()
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    s.step(epoch)
                out.append((s.get_last_lr(), [str(x.message)[:60] for x in w]))
        return out
    same(f, rtol=0, atol=0)


def test_wrong_order_warning_and_get_lr_warning():
    def f(lib):
        o = make_opt(lib)
        s = S(lib).StepLR(o, 2)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s.step()          # before any optimizer.step()
            o.step()
            s.step()
            s.get_lr()        # outside step(): points to get_last_lr()
        return [(x.category.__name__, str(x.message)) for x in w]
    same(f)

    def overridden(lib):
        o = make_opt(lib)
        s = S(lib).ExponentialLR(o, 0.5)
        o.step = lambda: None   # replaced after the scheduler wrapped it
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            o.step()
            s.step()
        return [str(x.message)[:40] for x in w]
    same(overridden)


def test_tensor_lr_is_updated_in_place():
    def f(lib):
        p = lib.zeros(2, requires_grad=True)
        lr = lib.tensor(0.5)
        o = lib.optim.SGD([p], lr=lr)
        s = S(lib).StepLR(o, 1, 0.5)
        for _ in range(3):
            o.step()
            s.step()
        return o.param_groups[0]["lr"] is lr, lr, s.get_last_lr()
    same(f)


def test_last_epoch_resume_needs_initial_lr():
    same(lambda lib: S(lib).StepLR(make_opt(lib), 3, last_epoch=4), exact_msg=True)

    def resumed(lib):
        o = make_opt(lib)
        for g in o.param_groups:
            g["initial_lr"] = 1.0
        s = S(lib).ExponentialLR(o, 0.5, last_epoch=4)
        o.step()
        s.step()
        return s.get_last_lr(), s.last_epoch
    same(resumed)


ERRORS = [
    lambda lib: S(lib).StepLR(object(), 3),
    lambda lib: S(lib).ConstantLR(make_opt(lib), factor=1.5),
    lambda lib: S(lib).LinearLR(make_opt(lib), start_factor=0),
    lambda lib: S(lib).LinearLR(make_opt(lib), end_factor=2),
    lambda lib: S(lib).LambdaLR(make_opt(lib), [lambda e: 1.0]),
    lambda lib: S(lib).MultiplicativeLR(make_opt(lib), [1.0, 2.0]),
    lambda lib: S(lib).CosineAnnealingWarmRestarts(make_opt(lib), 0),
    lambda lib: S(lib).CosineAnnealingWarmRestarts(make_opt(lib), 2, T_mult=0),
    lambda lib: S(lib).CosineAnnealingWarmRestarts(make_opt(lib), 2, eta_min="x"),
    lambda lib: S(lib).CosineAnnealingWarmRestarts(make_opt(lib), 2).step(-1),
    lambda lib: S(lib).OneCycleLR(make_opt(lib), 1.0),
    lambda lib: S(lib).OneCycleLR(make_opt(lib), 1.0, total_steps=0),
    lambda lib: S(lib).OneCycleLR(make_opt(lib), 1.0, epochs=0, steps_per_epoch=3),
    lambda lib: S(lib).OneCycleLR(make_opt(lib), 1.0, total_steps=5, pct_start=1.5),
    lambda lib: S(lib).OneCycleLR(make_opt(lib), 1.0, total_steps=5, anneal_strategy="exp"),
    lambda lib: S(lib).OneCycleLR(make_opt(lib), [1.0], total_steps=5),
    lambda lib: S(lib).OneCycleLR(make_opt(lib, "Adagrad"), 1.0, total_steps=5),
    lambda lib: [S(lib).OneCycleLR(o := make_opt(lib), 1.0, total_steps=2).step() for _ in range(3) if o.step() or 1],
    lambda lib: S(lib).CyclicLR(make_opt(lib), 0.1, 1.0, mode="nope"),
    lambda lib: S(lib).CyclicLR(make_opt(lib, "Adagrad"), 0.1, 1.0),
    lambda lib: S(lib).ReduceLROnPlateau(make_opt(lib), factor=1.0),
    lambda lib: S(lib).ReduceLROnPlateau(make_opt(lib), mode="middle"),
    lambda lib: S(lib).ReduceLROnPlateau(make_opt(lib), threshold_mode="x"),
    lambda lib: S(lib).ReduceLROnPlateau(make_opt(lib), min_lr=[0.1]),
    lambda lib: S(lib).SequentialLR(o := make_opt(lib), [S(lib).StepLR(o, 2)], [3]),
    lambda lib: S(lib).SequentialLR(make_opt(lib), [], []),
    lambda lib: S(lib).SequentialLR(o := make_opt(lib), [S(lib).StepLR(o, 2), S(lib).StepLR(make_opt(lib), 2)], [3]),
    lambda lib: S(lib).SequentialLR(o := make_opt(lib), [S(lib).StepLR(o, 2), S(lib).ReduceLROnPlateau(o)], [3]),
    lambda lib: S(lib).ChainedScheduler([]),
    lambda lib: S(lib).ChainedScheduler([S(lib).StepLR(make_opt(lib), 2), S(lib).StepLR(make_opt(lib), 2)]),
    lambda lib: S(lib).ChainedScheduler([1]),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(ERRORS[i], exact_msg=True)
