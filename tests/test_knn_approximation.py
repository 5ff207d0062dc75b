"""The KNN approximation of a network and the q, d features (calibtut.selective.knn_approximation)."""

import numpy as np
import pytest
import torch

from calibtut.selective import (
    KNNApproximation,
    KNNFeatures,
    Localizer,
    band_width,
    consecutive_agreement,
    fit_knn_approximation,
    fit_localizer,
    nearest_neighbors,
)


def _inputs(seed, n=400, k=6, n_classes=3):
    g = torch.Generator().manual_seed(seed)
    d = torch.rand(n, k, generator=g, dtype=torch.float64).sort(dim=1).values * 3
    labels = torch.randint(0, n_classes, (n, k), generator=g)
    logits = torch.randn(n, k, n_classes, generator=g, dtype=torch.float64) * 2
    return d, logits, labels


def test_forward_is_equation_2_by_hand():
    knn = KNNApproximation(3, eta=0.5)
    with torch.no_grad():
        knn.beta.copy_(torch.tensor([0.1, -0.2, 0.3]))
        knn.gamma.copy_(torch.tensor([1.0, 2.0, 0.5]))
    d, logits, labels = _inputs(0, n=5)
    got = knn(d, logits, labels).detach().numpy()
    d, logits, labels = d.numpy(), logits.numpy(), labels.numpy()
    for t in range(5):
        w = np.exp(-d[t] / 0.5) / np.exp(-d[t] / 0.5).sum()
        expected = np.array([0.1, -0.2, 0.3])
        for k in range(d.shape[1]):
            sign = np.where(np.arange(3) == labels[t, k], 1.0, -1.0)
            expected = expected + w[k] * (np.tanh(logits[t, k]) + np.array([1.0, 2.0, 0.5]) * sign)
        assert np.allclose(got[t], expected)
    assert sum(p.numel() for p in knn.parameters()) == 2 * 3 + 1


def test_fit_recovers_a_knn_teacher():
    # the teacher is itself a KNN approximation with other parameters: the fit must end with few
    # argmax disagreements on the held-out half, far fewer than the untrained start
    d, logits, labels = _inputs(1, n=1000)
    teacher_model = KNNApproximation(3, eta=0.3)
    with torch.no_grad():
        teacher_model.beta.copy_(torch.tensor([0.4, -0.3, 0.0]))
        teacher_model.gamma.copy_(torch.tensor([3.0, 2.0, 2.5]))
        teacher = teacher_model(d, logits, labels)
    knn, history = fit_knn_approximation(KNNApproximation(3, eta=1.0), d, logits, labels, teacher,
                                         epochs=20, batch_size=16, seed=0)
    assert history.disagreements[history.best_epoch] == min(history.disagreements)
    assert min(history.disagreements) <= 10 < history.disagreements[0]  # of 500 held-out rows
    assert abs(knn.eta - 0.3) < 0.1  # the distance temperature is recovered
    with torch.no_grad():
        agree = (knn(d, logits, labels).argmax(1) == teacher.argmax(1)).double().mean()
    assert agree > 0.95
    # masking: an epoch is masked exactly when the previous one did not set a new minimum
    for e in range(1, len(history.disagreements)):
        new_min = history.disagreements[e - 1] < min(history.disagreements[:e - 1], default=np.inf)
        assert history.masked[e] == (not new_min)
    assert not history.masked[0]
    # deterministic given the seed
    _, again = fit_knn_approximation(KNNApproximation(3, eta=1.0), d, logits, labels, teacher, epochs=20,
                                     batch_size=16, seed=0)
    assert again.disagreements == history.disagreements


def test_pipeline_from_exemplars_to_features():
    # exemplars of 3 clusters; neighbours from the exact search feed the KNN and the q, d features
    rng = np.random.default_rng(2)
    centers = rng.normal(scale=4, size=(3, 8))
    y_tr, y_ca = rng.integers(0, 3, 600), rng.integers(0, 3, 200)
    r_tr, r_ca = centers[y_tr] + rng.normal(size=(600, 8)), centers[y_ca] + rng.normal(size=(200, 8))
    net_tr = np.eye(3)[y_tr] * 4 - 2
    d, idx = nearest_neighbors(torch.tensor(r_ca), torch.tensor(r_tr), 25)
    knn = KNNApproximation(3)
    with torch.no_grad():
        probs = torch.softmax(knn(d, torch.tensor(net_tr)[idx], torch.tensor(y_tr)[idx]), dim=1).numpy()
    pred = probs.argmax(1)
    assert np.mean(pred == y_ca) > 0.95  # well-separated clusters
    q = consecutive_agreement(pred, net_tr.argmax(1)[idx.numpy()], y_tr[idx.numpy()])
    assert q.max() == 25 and np.mean(q[pred == y_ca] == 25) > 0.9
    cal = KNNFeatures(probs, y_ca, q, d[:, 0].numpy())
    omega = band_width(cal)
    assert 0 < omega < cal.d.max()
    assert omega == np.std(cal.d[(q > 0) & (pred == y_ca)])


def test_localizer_recovers_its_temperature():
    # Eq. 8: psi = softmax(-d / eta) over the whole support; a teacher built with eta = 0.5 is matched
    g = torch.Generator().manual_seed(5)
    d = torch.rand(600, 40, generator=g, dtype=torch.float64) * 4
    support = torch.randn(40, 3, generator=g, dtype=torch.float64) * 3
    teacher = Localizer(eta=0.5)(d, support).detach()
    loc = Localizer(eta=1.0)
    assert torch.allclose(loc.weights(d).sum(dim=1), torch.ones(600, dtype=torch.float64))
    loc, history = fit_localizer(loc, d, support, teacher, epochs=15, batch_size=8, seed=0)
    assert abs(loc.eta - 0.5) < 0.15
    with torch.no_grad():
        assert (loc(d, support).argmax(1) == teacher.argmax(1)).double().mean() > 0.97
    with pytest.raises(ValueError, match="teacher_logits must have shape"):
        fit_localizer(Localizer(), d, support, teacher[:, :2])


def test_consecutive_agreement_against_the_recursion_of_equation_4():
    rng = np.random.default_rng(3)
    pred = rng.integers(0, 2, 300)
    nb_pred, nb_labels = rng.integers(0, 2, (300, 30)), rng.integers(0, 2, (300, 30))
    nb_labels[:100] = nb_pred[:100] = pred[:100, None]  # all agree: q = cap
    got = consecutive_agreement(pred, nb_pred, nb_labels)
    for t in range(300):
        q = 0
        for k in range(1, 26):  # q(k) = q(k-1) + [agree] [correct] [q(k-1) = k-1]
            q += int(pred[t] == nb_pred[t, k - 1] == nb_labels[t, k - 1] and q == k - 1)
        assert got[t] == q
    assert np.all(got[:100] == 25)
    assert consecutive_agreement([0], [[0, 0, 1]], [[0, 1, 1]]).tolist() == [1]
    assert consecutive_agreement([0], [[0, 0, 0]], [[0, 0, 0]], cap=2).tolist() == [2]


def test_band_width_hand_case_and_errors():
    # points with q > 0 and a correct argmax: distances 0.5, 1.5 -> std 0.5; times n_std 2 -> 1.0
    probs = [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.7, 0.3]]
    cal = KNNFeatures(probs, [0, 1, 0, 1], [3, 1, 0, 2], [0.5, 1.5, 9.0, 1.0])
    assert band_width(cal, n_std=2.0) == 1.0
    with pytest.raises(ValueError, match="omega is undefined"):
        band_width(KNNFeatures(probs[:2], [0, 1], [0, 0], [0.5, 1.5]))
    with pytest.raises(ValueError, match="cal must be labelled"):
        band_width(KNNFeatures(probs, None, [3, 1, 0, 2], [0.5, 1.5, 9.0, 1.0]))
    with pytest.raises(TypeError, match="cal must be a KNNFeatures bundle"):
        band_width([0.5, 1.5])


def test_clear_errors():
    d, logits, labels = _inputs(4, n=10)
    with pytest.raises(ValueError, match=r"neighbor_labels must lie in \[0, 2\]"):
        KNNApproximation(3)(d, logits, labels + 3)
    with pytest.raises(ValueError, match="neighbor_logits must have shape"):
        KNNApproximation(2)(d, logits, labels)
    with pytest.raises(ValueError, match="eta must be > 0"):
        KNNApproximation(3, eta=0.0)
    with pytest.raises(ValueError, match="same number"):
        fit_knn_approximation(KNNApproximation(3), d, logits, labels, torch.zeros(9, 3))
    with pytest.raises(ValueError, match="must describe the same"):
        consecutive_agreement([0, 1], [[0, 1]], [[0, 1]])
