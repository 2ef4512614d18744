"""``python -m ember.demo``: train an MLP and a CNN on the digits with ember (optionally beside PyTorch),
save them in PyTorch's format, reload them, and plot the curves."""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import time

TARGETS = {"mlp": 0.95, "cnn": 0.97}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ember.demo", description=__doc__)
    p.add_argument("--model", choices=("mlp", "cnn", "both"), default="both")
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="ember-demo", help="directory for the checkpoints and the figure")
    p.add_argument("--compare-torch", action="store_true", help="train the same models with PyTorch too")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def _check_reload(lib, kind, model, path, test) -> float:
    """Save the state dict in PyTorch's format, load it into a fresh model, and return its test accuracy."""
    from .train import accuracy, make_model
    lib.save(model.state_dict(), path)
    fresh = make_model(lib, kind)
    fresh.load_state_dict(lib.load(path, weights_only=True))
    return accuracy(lib, fresh, *test)


def _plot(results: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(11, 4))
    for (libname, kind), hist in results.items():
        style = "-" if libname == "ember" else "--"
        epochs = range(1, len(hist.loss) + 1)
        per_epoch = sum(hist.seconds) / len(hist.seconds)
        label = f"{kind} · {libname} ({per_epoch * 1e3:.0f} ms/epoch)"
        ax_loss.plot(epochs, hist.loss, style, label=label)
        ax_acc.plot(epochs, hist.test_acc, style, label=label)
    ax_loss.set(title="training loss", xlabel="epoch", yscale="log")
    ax_acc.set(title="test accuracy", xlabel="epoch", ylim=(0.7, 1.0))
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("ember.demo: scikit-learn digits (8x8)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        import matplotlib  # noqa: F401
        import sklearn  # noqa: F401
        import tqdm  # noqa: F401
    except ImportError as e:
        print(f"ember.demo needs the demo extra: pip install 'ember[demo]' ({e})", file=sys.stderr)
        return 2
    from .train import fit

    libs = ["ember"]
    if args.compare_torch:
        try:
            importlib.import_module("torch")
        except ImportError:
            print("--compare-torch needs PyTorch installed (pip install torch)", file=sys.stderr)
            return 2
        libs.append("torch")
    os.makedirs(args.out, exist_ok=True)
    kinds = ("mlp", "cnn") if args.model == "both" else (args.model,)
    results, ok = {}, True
    t_start = time.perf_counter()
    for kind in kinds:
        for libname in libs:
            lib = importlib.import_module(libname)
            model, hist, test = fit(lib, kind, epochs=args.epochs, seed=args.seed, progress=not args.no_progress,
                                    label=f"{libname} ")
            results[(libname, kind)] = hist
            acc = hist.test_acc[-1]
            line = (f"{libname:5s} {kind}: test accuracy {acc:.4f}, final loss {hist.loss[-1]:.4f}, "
                    f"{sum(hist.seconds) / len(hist.seconds) * 1e3:.0f} ms/epoch")
            if libname == "ember":
                path = os.path.join(args.out, f"{kind}.pt")
                reloaded = _check_reload(lib, kind, model, path, test)
                line += f"; saved to {path}, reloaded: accuracy {reloaded:.4f}"
                if reloaded != acc:
                    line += " (MISMATCH)"
                    ok = False
                if acc < TARGETS[kind]:
                    line += f" (below the {TARGETS[kind]:.0%} target)"
                    ok = False
            print(line, flush=True)
    fig = os.path.join(args.out, "curves.png")
    _plot(results, fig)
    print(f"curves: {fig}; total {time.perf_counter() - t_start:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
