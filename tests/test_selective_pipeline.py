"""Paper 001's feature pipeline as one object (:class:`calibtut.selective.KNNFeaturePipeline`)."""

import numpy as np
import pytest
import torch
from sklearn.neighbors import NearestNeighbors

from calibtut.selective import (
    KNNApproximation,
    KNNFeaturePipeline,
    KNNFeatures,
    Localizer,
    consecutive_agreement,
    fit_knn_approximation,
    fit_localizer,
    nearest_neighbors,
)


def _network(n, seed, dim=5):
    """Exemplars of a two-class task, and a linear 'network' that is right about 85 % of the time."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    r = rng.normal(size=(n, dim)) + 1.2 * y[:, None]
    z = r.sum(axis=1) - 0.6 * dim
    return r, np.column_stack([-z / 2, z / 2]), y


def _fitted(seed=0, **kwargs):
    train, fit, cal = _network(400, seed), _network(120, seed + 100), _network(150, seed + 200)
    pipe = KNNFeaturePipeline(**{"n_neighbors": 10, "epochs": 3, **kwargs}).fit(*train)
    pipe.fit_knn(fit[0], fit[1], seed=seed)
    return pipe, train, fit, cal


def test_neighbours_match_scikit_learn():
    pipe, train, _, cal = _fitted()
    distances, indices = pipe.kneighbors(cal[0])
    expected_d, expected_i = NearestNeighbors(n_neighbors=10).fit(train[0]).kneighbors(cal[0])
    np.testing.assert_array_equal(indices, expected_i)
    np.testing.assert_allclose(distances.numpy(), expected_d, rtol=1e-12)
    assert distances.dtype == torch.float64


def test_hand_case_on_a_line():
    # training points 0..9 on a line, labels 0 below 5 and 1 from 5, a network right everywhere;
    # the point 2.2 has neighbours 2, 3 (d = 0.2), the point 6.9 has 7, 6 (d = 0.1)
    r = np.arange(10.0)[:, None]
    y = (r[:, 0] >= 5).astype(int)
    logits = np.column_stack([5.0 - r[:, 0], r[:, 0] - 5.0])
    pipe = KNNFeaturePipeline(n_neighbors=2, epochs=1).fit(r, logits, y)
    distances, indices = pipe.kneighbors([[2.2], [6.9]])
    assert indices.tolist() == [[2, 3], [7, 6]]
    pipe.fit_knn(r, logits, seed=0)
    features = pipe.transform([[2.2], [6.9]], [0, 1])
    np.testing.assert_allclose(features.d, [0.2, 0.1])
    # both neighbours agree with the KNN's prediction and are right: q = K = 2
    assert features.q.tolist() == [2, 2] and features.probs.argmax(axis=1).tolist() == [0, 1]


def test_the_pipeline_is_the_library_steps_composed():
    # the object runs the steps the experiments used to write by hand, to the bit
    pipe, train, fit, cal = _fitted(seed=3, knn_eta="median")
    reference = torch.as_tensor(train[0])
    dist, idx = nearest_neighbors(torch.as_tensor(fit[0]), reference, 10)
    knn = KNNApproximation(2, eta=float(np.median(dist.numpy())))
    labels = torch.as_tensor(train[2])
    fit_knn_approximation(knn, dist, torch.as_tensor(train[1])[idx], labels[idx], torch.as_tensor(fit[1]), epochs=3,
                          seed=3)
    cd, ci = nearest_neighbors(torch.as_tensor(cal[0]), reference, 10)
    with torch.no_grad():
        logits = knn(cd, torch.as_tensor(train[1])[ci], labels[ci]).numpy()
    np.testing.assert_array_equal(pipe.knn_logits(cal[0]), logits)
    features = pipe.transform(cal[0], cal[2])
    pred = features.probs.argmax(axis=1)
    np.testing.assert_array_equal(pred, logits.argmax(axis=1))
    np.testing.assert_array_equal(features.q, consecutive_agreement(pred, train[1].argmax(axis=1)[ci.numpy()],
                                                                    train[2][ci.numpy()], cap=10))
    np.testing.assert_array_equal(features.d, cd[:, 0].numpy())
    pipe.fit_localizer(fit[0], cal[0], eta=0.7, seed=3)
    localizer = Localizer(eta=0.7)
    with torch.no_grad():
        teacher = knn(dist, torch.as_tensor(train[1])[idx], labels[idx])
    fit_localizer(localizer, torch.cdist(torch.as_tensor(fit[0]), torch.as_tensor(cal[0])), torch.as_tensor(logits),
                  teacher, epochs=3, seed=3)
    assert pipe.localizer_.eta == localizer.eta
    with torch.no_grad():
        psi = localizer.weights(torch.cdist(torch.as_tensor(cal[0][:7]), torch.as_tensor(cal[0]))).numpy()
    np.testing.assert_array_equal(pipe.localizer_weights(cal[0][:7]), psi)


def test_shared_neighbours_give_the_same_features():
    pipe, _, _, cal = _fitted()
    neighbours = pipe.kneighbors(cal[0])
    a, b = pipe.transform(cal[0], cal[2]), pipe.transform(labels=cal[2], neighbours=neighbours)
    for field in ("probs", "q", "d"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert isinstance(a, KNNFeatures) and a.labels is not None


@pytest.mark.parametrize("seed", range(4))
def test_the_knn_mimics_the_network(seed):
    # the KNN approximation is fitted to agree with the network: on fresh points it does on
    # most of them (a 25-point dev half and three epochs: 80 % is far below what it reaches)
    pipe, _, _, cal = _fitted(seed=seed, n_neighbors=25, epochs=5)
    agreement = np.mean(pipe.transform(cal[0]).probs.argmax(axis=1) == cal[1].argmax(axis=1))
    assert agreement > 0.8


def test_arguments_are_checked():
    r, logits, y = _network(30, 0)
    # hyper-parameters are checked by fit (the estimator contract)
    for bad in ({"n_neighbors": 0}, {"knn_eta": "mean"}, {"knn_eta": -1.0}, {"epochs": 0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            KNNFeaturePipeline(**bad).fit(r, logits, y)
    with pytest.raises(ValueError, match="at least n_neighbors"):
        KNNFeaturePipeline(n_neighbors=40).fit(r, logits, y)
    with pytest.raises(ValueError, match="train_exemplars"):
        KNNFeaturePipeline(n_neighbors=5).fit(r[:, 0], logits, y)
    with pytest.raises(TypeError):
        KNNFeaturePipeline(n_neighbors=5).fit(r.astype(complex), logits, y)
    with pytest.raises(RuntimeError, match="not fitted"):
        KNNFeaturePipeline().transform(r)
    pipe = KNNFeaturePipeline(n_neighbors=5, epochs=1).fit(r, logits, y)
    with pytest.raises(RuntimeError, match="not fitted"):
        pipe.knn_logits(r)
    pipe.fit_knn(r, logits, seed=0)
    with pytest.raises(ValueError, match="teacher_logits"):
        pipe.fit_knn(r, logits[:, :1], seed=0)
    with pytest.raises(ValueError, match="eta"):
        pipe.fit_localizer(r, r, eta=0.0)
    with pytest.raises(ValueError, match="neighbours"):
        pipe.transform(neighbours=(torch.zeros(3, 2), np.zeros((3, 2), int)))
