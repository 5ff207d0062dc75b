"""The Protein stand-in network of paper 001: a small 1-D CNN whose width-1 memory layer gives exemplar vectors."""

import numpy as np
import pytest
import torch

from calibtut.models.protein_cnn import (
    AMINO_ACIDS,
    ProteinCNN,
    encode_proteins,
    fit_protein_cnn,
    protein_cnn_outputs,
)


def _proteins(n=12, seed=0):
    """Random sequences whose state is a function of the residue and its left neighbour."""
    rng = np.random.default_rng(seed)
    seqs, labels = [], []
    for _ in range(n):
        length = int(rng.integers(15, 60))
        idx = rng.integers(0, 20, size=length)
        seqs.append("".join(AMINO_ACIDS[i] for i in idx))
        labels.append((idx + np.roll(idx, 1)) % 3)
    return seqs, labels


def _small(seed=0):
    return ProteinCNN(3, embedding=8, channels=16, width=5, n_layers=2, hidden=12, seed=seed)


def test_encoding_hand_case():
    tokens = encode_proteins(["ACY", "xub"])
    assert tokens[0].tolist() == [1, 2, 20]
    assert tokens[1].tolist() == [21, 21, 21]  # X, U and B are the one unknown token
    with pytest.raises(ValueError, match=r"sequences\[1\]"):
        encode_proteins(["AC", "A-C"])
    with pytest.raises(ValueError, match=r"sequences\[0\]"):
        encode_proteins([""])
    with pytest.raises(TypeError, match="sequences"):
        encode_proteins("ACDE")


def test_outputs_are_one_row_per_residue_in_protein_order():
    seqs, _ = _proteins(5)
    net = _small()
    r, logits = protein_cnn_outputs(net, seqs, batch_size=2)
    assert r.shape == (sum(map(len, seqs)), 12) and logits.shape == (r.shape[0], 3)
    assert np.all(np.abs(r) <= 1)  # tanh memory layer
    # the logits are the output layer applied to the exemplar vectors
    with torch.no_grad():
        expected = net.output(torch.as_tensor(r).T.unsqueeze(0)).squeeze(0).T.double().numpy()
    np.testing.assert_allclose(logits, expected, atol=1e-5)
    # protein 2 alone gives the rows of protein 2
    start = len(seqs[0]) + len(seqs[1])
    alone_r, alone_logits = protein_cnn_outputs(net, seqs[2:3])
    np.testing.assert_allclose(alone_r, r[start:start + len(seqs[2])], atol=1e-5)
    np.testing.assert_allclose(alone_logits, logits[start:start + len(seqs[2])], atol=1e-5)


def test_padding_never_changes_a_proteins_outputs():
    seqs, _ = _proteins(6, seed=1)
    net = _small(seed=2)
    one_by_one = [protein_cnn_outputs(net, [s]) for s in seqs]
    for batch_size in (2, 6):  # batched with longer proteins: padded at the end
        r, logits = protein_cnn_outputs(net, seqs, batch_size=batch_size)
        np.testing.assert_allclose(np.concatenate([o[0] for o in one_by_one]), r, atol=1e-5)
        np.testing.assert_allclose(np.concatenate([o[1] for o in one_by_one]), logits, atol=1e-5)
    # and the padded positions of a batch are zero in the memory layer
    tokens = torch.tensor([[1, 2, 3, 0, 0]])
    r = net.exemplars(tokens, tokens > 0)
    assert torch.all(r[0, 3:] == 0) and torch.any(r[0, :3] != 0)


def test_a_tiny_set_is_learned_almost_perfectly():
    # the state is (residue + left neighbour) mod 3: a width-5 convolution sees both
    seqs, labels = _proteins(12)
    net = _small()
    losses = fit_protein_cnn(net, seqs, labels, epochs=60, batch_size=4, lr=1e-2, seed=0)
    _, logits = protein_cnn_outputs(net, seqs)
    accuracy = np.mean(logits.argmax(axis=1) == np.concatenate(labels))
    assert losses[-1] < 0.25 * losses[0] and accuracy > 0.95, (losses[-1], accuracy)


@pytest.mark.parametrize("labels, match", [
    ([np.zeros(3)], r"one array per protein"),
    ([np.zeros(4), np.zeros(2)], r"labels\[0\]"),
    ([np.zeros(3), np.full(2, 3)], r"labels\[1\] must be one integer in 0..2"),
    ([np.zeros(3), np.full(2, 0.5)], r"labels\[1\]"),
])
def test_training_refuses_bad_labels(labels, match):
    with pytest.raises(ValueError, match=match):
        fit_protein_cnn(_small(), ["ACD", "EF"], labels)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="width must be odd"):
        ProteinCNN(width=4)
    with pytest.raises(ValueError, match="n_classes"):
        ProteinCNN(1)
    with pytest.raises(TypeError, match="model must be a ProteinCNN"):
        protein_cnn_outputs(torch.nn.Linear(2, 2), ["AC"])
    with pytest.raises(ValueError, match="lr"):
        fit_protein_cnn(_small(), ["AC"], [np.zeros(2)], lr=0.0)
    with pytest.raises(ValueError, match="device"):
        protein_cnn_outputs(_small(), ["AC"], device="tpu")
