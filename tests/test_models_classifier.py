"""LeNet-5 and the classification training loop (calibtut.models, paper 004)."""

import numpy as np
import pytest
import torch

from calibtut.models import LeNet5, extract_features, fit_classifier, predict_logits


def _bars(n, seed):
    """Two classes of 28 x 28 images: a vertical or a horizontal bar, plus noise."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    X = rng.normal(0, 0.3, size=(n, 28, 28))
    pos = rng.integers(6, 22, size=n)
    for i in range(n):
        if y[i]:
            X[i, :, pos[i] - 2 : pos[i] + 2] += 1
        else:
            X[i, pos[i] - 2 : pos[i] + 2, :] += 1
    return X.reshape(n, 784), y


def test_lenet_shapes_and_parameter_count():
    model = LeNet5(seed=0)
    # conv 6*25+6, conv 16*6*25+16, fc 256*120+120, 120*84+84, 84*10+10
    assert sum(p.numel() for p in model.parameters()) == 156 + 2416 + 30840 + 10164 + 850
    x = torch.zeros(3, 784)
    assert model(x).shape == (3, 10)
    assert torch.equal(model(x), model(x.view(3, 28, 28)))
    with pytest.raises(ValueError, match="784"):
        model(torch.zeros(3, 100))
    a, b = LeNet5(seed=1), LeNet5(seed=1)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_lenet_learns_bars_and_training_is_seeded():
    X, y = _bars(300, 0)
    Xv, yv = _bars(200, 1)
    model = LeNet5(2, seed=0)
    hist = fit_classifier(model, X, y, val=(Xv, yv), epochs=3, batch_size=50, lr=1e-2, seed=0, progress=False)
    assert hist.best_loss < 0.1  # validation error
    assert hist.best_epoch == int(np.argmin(hist.val_loss))
    logits = predict_logits(model, Xv)
    assert np.mean(logits.argmax(1) != yv) == pytest.approx(hist.best_loss)
    with torch.no_grad():
        assert np.allclose(logits, model(torch.as_tensor(Xv, dtype=torch.float32)).double().numpy())
    assert extract_features(model, Xv[:5]).shape == (5, 84)
    again = LeNet5(2, seed=0)
    fit_classifier(again, X, y, val=(Xv, yv), epochs=3, batch_size=50, lr=1e-2, seed=0, progress=False)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), again.parameters()))


def test_early_stopping_on_validation_error():
    # labels unrelated to the inputs: the validation error cannot keep improving, so patience fires
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(200, 5)), rng.integers(0, 3, size=200)
    Xv, yv = rng.normal(size=(100, 5)), rng.integers(0, 3, size=100)
    torch.manual_seed(0)
    model = torch.nn.Linear(5, 3)
    hist = fit_classifier(model, X, y, val=(Xv, yv), epochs=200, lr=0.05, patience=3, seed=0, progress=False)
    assert hist.stopped_early and len(hist.val_loss) == hist.best_epoch + 4
    assert np.mean(predict_logits(model, Xv).argmax(1) != yv) == pytest.approx(hist.best_loss)


def test_step_lr_schedule_of_the_source_models():
    # paper 004's source recipe halves Adam's rate every lr_step epochs (100 there, 2 here)
    X, y = _bars(60, 0)
    model = torch.nn.Linear(784, 2)
    hist = fit_classifier(model, X, y, val=(X, y), epochs=5, batch_size=30, lr=0.01, lr_step=2, seed=0,
                          progress=False)
    assert hist.lr == pytest.approx([0.01, 0.01, 0.005, 0.005, 0.0025])
    with pytest.raises(ValueError, match="lr_step"):
        fit_classifier(model, X, y, lr_step=0, progress=False)
    with pytest.raises(ValueError, match="lr_gamma"):
        fit_classifier(model, X, y, lr_step=2, lr_gamma=-0.5, progress=False)


def test_classifier_input_checks():
    model = LeNet5(seed=0)
    with pytest.raises(ValueError, match="classes below 10"):
        fit_classifier(model, np.zeros((4, 784)), [0, 1, 2, 10], progress=False)
    with pytest.raises(ValueError, match="y"):
        fit_classifier(model, np.zeros((2, 784)), [0.5, 1], progress=False)
    with pytest.raises(TypeError, match="val"):
        fit_classifier(model, np.zeros((2, 784)), [0, 1], val=np.zeros(3), progress=False)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA"):
            fit_classifier(model, np.zeros((2, 784)), [0, 1], device="cuda", progress=False)
    with pytest.raises(TypeError, match="features"):
        extract_features(torch.nn.Linear(2, 2), np.zeros((2, 2)))
