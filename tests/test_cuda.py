"""The torch code of calibtut on a GPU gives what it gives on the CPU.

These tests run only where torch sees a CUDA device (``benchmarks/gpu_check.sh``
runs them on the lent GPU machine); CI has no GPU and skips them. Each runs the
same computation on ``cpu`` and ``cuda`` and compares:

- dropout is switched off where training is compared: its masks come from the
  device's own random generator (torch's CUDA and CPU generators give different
  streams for one seed), so with dropout two devices train two different models;
- in float64, training loops and penalties agree to ``rtol=1e-7``: the GPU's
  double-precision kernels differ from the CPU's only in summation order, whose
  relative error after a few epochs of Adam is of the order of 1e-12, far inside
  the tolerance, while a device bug (a tensor left on the CPU, a seed drawn
  on another generator, a wrong reduction) moves the result by 1e-3 or more;
- in float32 (the networks of papers 001 and 004 as the experiments run them),
  outputs of the same weights agree to ``atol=1e-4`` on values of order 1.
"""

import copy

import numpy as np
import pytest
import torch

from calibtut.models import fit_study, fit_study_engine, make_study_model
from calibtut.models.batched import fit_study_batched
from calibtut.models.protein_cnn import ProteinCNN, protein_cnn_outputs
from calibtut.regularizers.calibration_penalties import pce_kde_pit, pce_sort
from calibtut.regularizers.quantile_regularization import pit_negentropy
from calibtut.shift.discriminators import MLPDiscriminator

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

RTOL64 = 1e-7


def _data(seed, n=300, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X[:, 0] + 0.5 * rng.normal(size=n)


def _without_dropout(model):
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    return model


def _assert_same_weights(a, b, rtol):
    for (name, pa), pb in zip(a.state_dict().items(), b.state_dict().values()):
        np.testing.assert_allclose(pa.cpu().numpy(), pb.cpu().numpy(), rtol=rtol, atol=1e-10, err_msg=name)


@pytest.mark.parametrize(("name", "regularizer"), [("mix-nll", "pce-kde"), ("mix-crps", "pce-sort"),
                                                   ("sqr-affine", "trunc")])
def test_study_training_on_cuda_equals_cpu(name, regularizer):
    X, y = _data(0)
    val = _data(1)
    options = {"n_levels": 8} if "sqr" in name else {}
    fitted = {}
    for device in ("cpu", "cuda"):
        model, loss = make_study_model(name, 3, regularizer=regularizer, lam=0.5, seed=0, **options)
        _without_dropout(model).double()
        hist = fit_study(model, X, y, loss=loss, val=val, seed=3, epochs=6, patience=3, batch_size=64,
                         device=device)
        fitted[device] = (model, hist)
    (m_cpu, h_cpu), (m_gpu, h_gpu) = fitted["cpu"], fitted["cuda"]
    assert h_cpu.best_epoch == h_gpu.best_epoch
    np.testing.assert_allclose(h_cpu.val_loss, h_gpu.val_loss, rtol=RTOL64)
    _assert_same_weights(m_cpu, m_gpu, RTOL64)


def test_batched_training_on_cuda_equals_cpu():
    X, y = _data(2)
    val = _data(3)
    pairs = [make_study_model("mix-nll", 3, regularizer="pce-kde", lam=lam, seed=i)
             for i, lam in enumerate((0.0, 0.2, 5.0))]
    models = {"cpu": [_without_dropout(m).double() for m, _ in pairs]}
    models["cuda"] = [copy.deepcopy(m) for m in models["cpu"]]
    hists = {device: fit_study_batched(models[device], X, y, losses=[loss for _, loss in pairs], val=val,
                                       seeds=[10, 11, 12], epochs=6, patience=3, batch_size=64, device=device)
             for device in ("cpu", "cuda")}
    for a, b, ha, hb in zip(models["cpu"], models["cuda"], hists["cpu"], hists["cuda"]):
        np.testing.assert_allclose(ha.val_loss, hb.val_loss, rtol=RTOL64)
        _assert_same_weights(a, b, RTOL64)


@pytest.mark.parametrize("name", ["mix-nll", "sqr", "sqr-affine"])
def test_study_engine_on_cuda_shares_its_draws_and_stays_on_the_device(name):
    # the engine draws batches, levels and masks with the CUDA generator, so it is compared with
    # itself: two copies of one model with one seed get the same draws and stay equal (bit for
    # bit), a regularized model beside them trains too, and every epoch is recorded
    X, y = _data(2)
    val = _data(3)
    options = {"n_levels": 8} if "sqr" in name else {}
    twin, loss = make_study_model(name, 3, seed=0, **options)
    other, reg_loss = make_study_model(name, 3, regularizer="pce-kde", lam=1.0, seed=1, **options)
    models = [twin, copy.deepcopy(twin), other]
    hists = fit_study_engine(models, X, y, losses=[loss, loss, reg_loss], val=val, seeds=[5, 5, 5], epochs=4,
                             patience=10, batch_size=64, device="cuda")
    assert [len(h.val_loss) for h in hists] == [4, 4, 4]
    assert all(np.isfinite(h.val_loss).all() and not h.diverged for h in hists)
    assert hists[0].val_loss == hists[1].val_loss
    for a, b in zip(models[0].state_dict().values(), models[1].state_dict().values()):
        assert a.is_cuda and torch.equal(a, b)


@pytest.mark.parametrize("penalty", [
    lambda pit: pce_kde_pit(pit, n_levels=50),
    lambda pit: pce_sort(pit),
    lambda pit: pit_negentropy(pit, sort="neural"),
], ids=["pce-kde", "pce-sort", "qr-negentropy"])
def test_penalties_and_gradients_on_cuda_equal_cpu(penalty):
    pit = torch.as_tensor(np.random.default_rng(4).uniform(0.01, 0.99, 257) ** 1.5)
    results = {}
    for device in ("cpu", "cuda"):
        x = pit.clone().to(device).requires_grad_(True)
        value = penalty(x)
        value.backward()
        results[device] = (value.item(), x.grad.cpu().numpy())
    assert results["cuda"][0] == pytest.approx(results["cpu"][0], rel=RTOL64)
    np.testing.assert_allclose(results["cuda"][1], results["cpu"][1], rtol=RTOL64, atol=1e-12)


def test_protein_network_outputs_on_cuda_equal_cpu():
    rng = np.random.default_rng(5)
    sequences = ["".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), size=n)) for n in (40, 73, 12)]
    model = ProteinCNN(seed=0)
    on_cpu = protein_cnn_outputs(model, sequences, device="cpu")
    on_gpu = protein_cnn_outputs(copy.deepcopy(model), sequences, device="cuda")
    for a, b in zip(on_cpu, on_gpu):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-4)


def test_discriminator_trains_on_cuda():
    rng = np.random.default_rng(6)
    Xs, Xt = rng.normal(size=(400, 4)), rng.normal(1.5, 1.0, size=(400, 4))
    probs = {device: MLPDiscriminator(hidden=16, dropout=0.0, epochs=20, seed=0,
                                                    device=device).fit(Xs, Xt)
             .predict_source_proba(np.vstack([Xs[:50], Xt[:50]])) for device in ("cpu", "cuda")}
    # float32 training on two devices: same seed and batches, kernels differ in rounding only
    np.testing.assert_allclose(probs["cuda"], probs["cpu"], atol=2e-3)
    assert probs["cuda"][:50].mean() > probs["cuda"][50:].mean() + 0.1
