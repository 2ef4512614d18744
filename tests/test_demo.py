"""The main job, ``python -m ember.demo``: ember trains the digits models as PyTorch does from the same seed."""
import os

import numpy as np
import pytest

import ember

pytest.importorskip("sklearn")
pytest.importorskip("tqdm")
from ember.demo.train import fit, load_digits  # noqa: E402


def test_split_is_drawn_from_the_seed():
    torch = pytest.importorskip("torch")
    (xe, ye), (te, tye) = load_digits(ember, 3)
    (xt, yt), (tt, tyt) = load_digits(torch, 3)
    np.testing.assert_array_equal(ye.numpy(), yt.numpy())
    np.testing.assert_array_equal(te.numpy(), tt.numpy())
    assert xe.shape == (1438, 64) and te.shape == (359, 64)


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_training_matches_torch_from_the_same_seed(kind):
    torch = pytest.importorskip("torch")
    _, he, _ = fit(ember, kind, epochs=2, seed=1, progress=False)
    _, ht, _ = fit(torch, kind, epochs=2, seed=1, progress=False)
    # float32 training: the same draws and the same updates, so the curves agree to rounding
    np.testing.assert_allclose(he.loss, ht.loss, rtol=2e-4)
    assert abs(he.test_acc[-1] - ht.test_acc[-1]) <= 2 / 359   # at most two test images differ
    assert he.loss[1] < he.loss[0]


def test_main_saves_reloads_and_plots(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from ember.demo.__main__ import main
    rc = main(["--model", "mlp", "--epochs", "2", "--out", str(tmp_path), "--no-progress"])
    out = capsys.readouterr().out
    assert "ember mlp: test accuracy" in out and "reloaded" in out and "MISMATCH" not in out
    assert os.path.getsize(tmp_path / "curves.png") > 10_000
    assert rc == (1 if "below the 95% target" in out else 0)   # the exit status says whether targets were met
    torch = pytest.importorskip("torch")
    state = torch.load(tmp_path / "mlp.pt", weights_only=True)   # PyTorch reads ember's checkpoint
    assert list(state) == ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"]
