"""The per-token CNN of paper 001's stand-ins on any vocabulary, and the word vocabulary of the Grammar task."""

import numpy as np
import pytest
import torch

from calibtut.models.protein_cnn import ProteinCNN, encode_proteins, fit_protein_cnn, protein_cnn_outputs
from calibtut.models.token_cnn import (
    PADDING,
    UNKNOWN,
    TokenCNN,
    WordVocabulary,
    fit_token_cnn,
    token_cnn_outputs,
)


def _sequences(n=10, n_tokens=12, seed=0):
    """Random token sequences whose class is 1 exactly where the token is 2 or follows a 3."""
    rng = np.random.default_rng(seed)
    tokens, labels = [], []
    for _ in range(n):
        t = rng.integers(1, n_tokens, size=int(rng.integers(3, 25)))
        after3 = np.r_[False, t[:-1] == 3]
        tokens.append(t)
        labels.append(((t == 2) | after3).astype(int))
    return tokens, labels


def _small(seed=0, n_tokens=12):
    return TokenCNN(n_tokens, 2, embedding=6, channels=10, width=3, n_layers=2, hidden=7, seed=seed)


# ------------------------------------------------------------------------------------------ vocabulary


def test_vocabulary_hand_case():
    sentences = [["The", "cat", "sat"], ["the", "dog"], ["A", "cat", "the"]]
    vocab = WordVocabulary(sentences)
    # counts (lower-cased): the 3, cat 2, sat 1, dog 1, a 1 -> kept: the, cat (most frequent first)
    assert vocab.words == ("the", "cat") and vocab.n_tokens == len(vocab) == 4
    assert [t.tolist() for t in vocab.encode([["CAT", "The", "sofa"]])] == [[3, 2, UNKNOWN]]
    assert PADDING == 0 and UNKNOWN == 1
    # every word kept with min_count=1, ties alphabetical: the (3), cat (2), then a, dog, sat
    assert WordVocabulary(sentences, min_count=1).words == ("the", "cat", "a", "dog", "sat")
    # case-sensitive: "The" is another word than "the"; "cat" and "the" are seen twice each
    assert WordVocabulary(sentences, lowercase=False).words == ("cat", "the")
    assert WordVocabulary(sentences, lowercase=False).encode([["The"]])[0].tolist() == [UNKNOWN]
    assert WordVocabulary(sentences, min_count=4).words == ()  # then every word is unknown
    assert WordVocabulary(sentences, min_count=4).encode([["the"]])[0].tolist() == [UNKNOWN]


def test_vocabulary_does_not_depend_on_sentence_order():
    sentences = [["b", "a"], ["a", "c", "b"], ["c"], ["d", "a"]]
    assert WordVocabulary(sentences).words == WordVocabulary(sentences[::-1]).words == ("a", "b", "c")


@pytest.mark.parametrize("sentences, error, match", [
    ("a sentence", TypeError, "sentences"),
    ([["a"], []], ValueError, r"sentences\[1\]"),
    ([["a", ""]], ValueError, r"sentences\[0\]"),
    ([["a", 3]], ValueError, r"sentences\[0\]"),
    (["word"], ValueError, r"sentences\[0\]"),
])
def test_vocabulary_refuses_bad_sentences(sentences, error, match):
    with pytest.raises(error, match=match):
        WordVocabulary(sentences)
    with pytest.raises(error, match=match):
        WordVocabulary([["a"]]).encode(sentences)


def test_vocabulary_refuses_bad_settings():
    with pytest.raises(ValueError, match="min_count"):
        WordVocabulary([["a"]], min_count=0)
    with pytest.raises(TypeError, match="lowercase"):
        WordVocabulary([["a"]], lowercase="yes")


# ------------------------------------------------------------------------------------------ network


def test_outputs_are_one_row_per_token_in_sequence_order():
    tokens, _ = _sequences(5)
    net = _small()
    r, logits = token_cnn_outputs(net, tokens, batch_size=2)
    assert r.shape == (sum(map(len, tokens)), 7) and logits.shape == (r.shape[0], 2)
    assert np.all(np.abs(r) <= 1)  # tanh memory layer
    with torch.no_grad():
        expected = net.output(torch.as_tensor(r).T.unsqueeze(0)).squeeze(0).T.double().numpy()
    np.testing.assert_allclose(logits, expected, atol=1e-5)
    assert token_cnn_outputs(net, [])[0].shape == (0, 7)


def test_padding_never_changes_a_sequences_outputs():
    tokens, _ = _sequences(7, seed=1)
    net = _small(seed=2)
    alone = [token_cnn_outputs(net, [t]) for t in tokens]
    for batch_size in (2, 3, 7):  # batched with longer sequences: padded at the end
        r, logits = token_cnn_outputs(net, tokens, batch_size=batch_size)
        np.testing.assert_allclose(np.concatenate([a[0] for a in alone]), r, atol=1e-5)
        np.testing.assert_allclose(np.concatenate([a[1] for a in alone]), logits, atol=1e-5)
    # a sequence's outputs do not depend on its neighbours in the batch either
    r1, _ = token_cnn_outputs(net, [tokens[0], tokens[1]])
    r2, _ = token_cnn_outputs(net, [tokens[0], tokens[2]])
    np.testing.assert_allclose(r1[:len(tokens[0])], r2[:len(tokens[0])], atol=1e-6)
    # the padded positions of a batch are zero in the memory layer
    x = torch.tensor([[4, 5, 6, 0, 0]])
    r = net.exemplars(x, x > 0)
    assert torch.all(r[0, 3:] == 0) and torch.any(r[0, :3] != 0)


def test_training_is_deterministic_given_the_seeds():
    tokens, labels = _sequences(8)
    outs, losses = [], []
    for _ in range(2):
        net = _small(seed=3)
        losses.append(fit_token_cnn(net, tokens, labels, epochs=2, batch_size=3, lr=5e-3, seed=4))
        outs.append(token_cnn_outputs(net, tokens))
    assert losses[0] == losses[1]
    assert np.array_equal(outs[0][0], outs[1][0]) and np.array_equal(outs[0][1], outs[1][1])
    other = _small(seed=3)
    fit_token_cnn(other, tokens, labels, epochs=2, batch_size=3, lr=5e-3, seed=5)  # another batch order
    assert not np.array_equal(token_cnn_outputs(other, tokens)[1], outs[0][1])
    assert not torch.equal(_small(seed=6).memory.weight, _small(seed=3).memory.weight)


def test_a_tiny_rule_is_learned_almost_perfectly():
    # class 1 where the token is 2 or follows a 3: a width-3 convolution sees both
    tokens, labels = _sequences(30)
    net = _small()
    losses = fit_token_cnn(net, tokens, labels, epochs=60, batch_size=5, lr=1e-2, seed=0)
    _, logits = token_cnn_outputs(net, tokens)
    accuracy = np.mean(logits.argmax(axis=1) == np.concatenate(labels))
    assert losses[-1] < 0.25 * losses[0] and accuracy > 0.95, (losses[-1], accuracy)


def test_class_weight_is_the_weighted_mean_and_one_weights_change_nothing():
    tokens, labels = _sequences(6)
    plain, ones = _small(seed=1), _small(seed=1)
    loss_plain = fit_token_cnn(plain, tokens, labels, epochs=2, batch_size=2, seed=0)
    loss_ones = fit_token_cnn(ones, tokens, labels, epochs=2, batch_size=2, class_weight=[1.0, 1.0], seed=0)
    np.testing.assert_allclose(loss_plain, loss_ones, rtol=1e-6)
    # one epoch at lr -> 0 leaves the weights as they are: the reported loss is then
    # sum_i w[y_i] l_i / sum_i w[y_i] of the initial network, computed here by hand
    net = _small(seed=1)
    _, logits = token_cnn_outputs(net, tokens)
    y = np.concatenate(labels)
    per_token = -torch.log_softmax(torch.as_tensor(logits), 1).numpy()[np.arange(y.size), y]
    w = np.where(y == 1, 4.0, 1.0)
    loss = fit_token_cnn(_small(seed=1), tokens, labels, epochs=1, batch_size=50, lr=1e-12, class_weight=[1, 4])
    np.testing.assert_allclose(loss[0], np.sum(w * per_token) / w.sum(), rtol=1e-5)


def test_the_protein_network_is_the_token_network_on_amino_acids():
    seqs = ["ACDEFGHIKLMNPQ", "RSTVWYXAC", "MKV"]
    labels = [np.arange(len(s)) % 3 for s in seqs]
    protein = ProteinCNN(3, embedding=8, channels=8, width=5, n_layers=2, hidden=6, seed=7)
    token = TokenCNN(22, 3, embedding=8, channels=8, width=5, n_layers=2, hidden=6, seed=7)
    assert isinstance(protein, TokenCNN) and protein.n_tokens == 22
    for a, b in zip(protein.state_dict().values(), token.state_dict().values()):
        assert torch.equal(a, b)  # same seed, same weights
    tokens = encode_proteins(seqs)
    loss_p = fit_protein_cnn(protein, seqs, labels, epochs=2, batch_size=2, seed=3)
    loss_t = fit_token_cnn(token, tokens, labels, epochs=2, batch_size=2, seed=3)
    assert loss_p == loss_t
    for a, b in zip(protein_cnn_outputs(protein, seqs), token_cnn_outputs(token, tokens)):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("tokens, match", [
    ([np.array([1, 2]), np.array([], dtype=int)], r"tokens\[1\]"),
    ([np.array([1, 12])], r"tokens\[0\] .*1..11"),  # 12 is outside a 12-token vocabulary
    ([np.array([0, 1])], r"tokens\[0\].*padding"),
    ([np.array([1.0, 2.0])], r"tokens\[0\]"),
    ([np.array([[1, 2]])], r"tokens\[0\]"),
])
def test_bad_tokens_name_themselves(tokens, match):
    with pytest.raises(ValueError, match=match):
        token_cnn_outputs(_small(), tokens)
    with pytest.raises(ValueError, match=match):
        fit_token_cnn(_small(), tokens, [np.zeros(len(t)) for t in tokens])


def test_bad_arguments_name_themselves():
    tokens, labels = [np.array([1, 2, 3])], [np.array([0, 1, 0])]
    with pytest.raises(TypeError, match="tokens"):
        token_cnn_outputs(_small(), np.array([1, 2]))
    with pytest.raises(ValueError, match=r"labels\[0\] must be one integer in 0..1 per token"):
        fit_token_cnn(_small(), tokens, [np.array([0, 2, 0])])
    with pytest.raises(ValueError, match="one array per sequence"):
        fit_token_cnn(_small(), tokens, [])
    with pytest.raises(ValueError, match="class_weight"):
        fit_token_cnn(_small(), tokens, labels, class_weight=[1.0])
    with pytest.raises(ValueError, match="class_weight"):
        fit_token_cnn(_small(), tokens, labels, class_weight=[1.0, 0.0])
    with pytest.raises(TypeError, match="class_weight"):
        fit_token_cnn(_small(), tokens, labels, class_weight=2.0)
    with pytest.raises(ValueError, match="n_tokens"):
        TokenCNN(1, 2)
    with pytest.raises(ValueError, match="n_classes"):
        TokenCNN(5, 1)
    with pytest.raises(ValueError, match="width must be odd"):
        TokenCNN(5, 2, width=4)
    with pytest.raises(TypeError, match="model must be a TokenCNN"):
        token_cnn_outputs(torch.nn.Linear(2, 2), tokens)
    with pytest.raises(ValueError, match="batch_size"):
        token_cnn_outputs(_small(), tokens, batch_size=0)
    with pytest.raises(ValueError, match="epochs"):
        fit_token_cnn(_small(), tokens, labels, epochs=0)
