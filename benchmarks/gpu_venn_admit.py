"""Venn-ADMIT on paper 001's exemplar recipe, on one GPU: frozen MiniLM token states, then joint fine-tuning.

One script for a machine with a GPU, torch, transformers and no network. It
needs two things carried to it, both written here (on a machine with the
``embeddings`` extra and the data mirror):

* ``--export-model DIR``: MiniLM's weights (half-precision safetensors),
  config and tokenizer files (about 46 MB);
* ``--export-texts FILE``: every text and label the Sentiment and
  SentimentOOD tasks use, for calibration seeds 0-9 (each text cut to what
  256 word pieces hold), with the seeded samples as indices, xz-compressed.

Then ``--model DIR --texts FILE --out DIR`` runs:

1. **frozen**: MiniLM's token states of every text, paper 001's memory layer
   (:class:`calibtut.models.exemplar.ExemplarCNN`, 1000 filters) trained on
   them, its exemplar vectors and logits;
2. **fine-tuned**: the same layer trained jointly with MiniLM
   (``finetune=True``), its exemplar vectors and logits;
3. for each representation, every calibration seed and both test sets, the
   KNN approximation, ADMIT, Venn-ADMIT and the baselines
   (:func:`calibtut.experiments.venn_admit.tasks.va_rows`), in CPU worker
   processes while the GPU trains.

It writes ``runs.csv`` (the columns of the published ``runs.csv`` and
``features``, ``representation``, ``device``), ``signals.csv`` (per task: the
q/d separation of test from calibration points, the q = K shares and
accuracies per predicted class, Venn-ADMIT's admissions by true and by
predicted class), the per-point frames of the first seed
(``points_<features>_<dataset>_seed<seed>.csv.gz``), ``timings.csv`` and
``meta.json`` to the output folder. ``--dry-run`` runs every step on the CPU
on a tiny subset (a check that takes a minute or two).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import lzma
import multiprocessing
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibtut.experiments.venn_admit.protection import sentiment_signals
from calibtut.experiments.venn_admit.tasks import DATASETS, va_rows
from calibtut.models.exemplar import ExemplarCNN, exemplar_outputs, fit_exemplar_cnn
from calibtut.models.sentence_embeddings import (
    MAX_WORD_PIECES,
    TokenizedTexts,
    export_minilm,
    minilm_token_encoder,
    minilm_transformer,
    token_states,
)

#: The published runs' calibration size and seeds.
N_CALIBRATION = 16000
SEEDS = tuple(range(10))
#: Parts of the texts file: the training reviews, the CAD test reviews, the Maas pool, the tweet pool.
PARTS = ("train", "test", "calibration", "ood")
#: The dry run's sizes: texts per part (calibration and tweets: per seed), seeds, epochs, word pieces.
DRY = {"train": 48, "test": 24, "calibration": 100, "ood": 30, "seeds": 2, "epochs": 1, "max_length": 64,
       "kappa": 20}

_START = time.perf_counter()


def log(message):
    print(f"[{time.perf_counter() - _START:7.1f} s] {message}", flush=True)


# ------------------------------------------------------------------------------------------ exports


def export_texts(path, seeds=SEEDS, n_calibration=N_CALIBRATION, max_length=MAX_WORD_PIECES):
    """Write the texts file: every part's texts (cut at ``max_length`` word pieces), labels and seeded samples."""
    from calibtut.data.sentiment import load_sentiment, sentiment_pool

    tokenizer, _, model_id = minilm_transformer()

    def cut(texts):
        enc = tokenizer(list(texts), truncation=True, max_length=max_length, return_offsets_mapping=True,
                        return_special_tokens_mask=True)
        ends = [max([e for (_, e), s in zip(offsets, special) if not s], default=0)
                for offsets, special in zip(enc["offset_mapping"], enc["special_tokens_mask"])]
        return [t[:e] if e else t for t, e in zip(texts, ends)]

    out = {"format": 1, "max_length": max_length, "model": model_id, "n_calibration": n_calibration}
    for part in PARTS:
        if part in ("train", "test"):
            texts, labels = load_sentiment(part)
            out[part] = {"texts": cut(texts), "labels": labels.tolist()}
            continue
        pool = sentiment_pool(part)
        row = {t: i for i, t in enumerate(pool)}
        labels = np.full(len(pool), -1)
        samples = {}
        for seed in seeds:
            texts, y = load_sentiment(part, seed=seed, n_calibration=n_calibration)
            index = np.array([row[t] for t in texts])
            labels[index] = y
            samples[str(seed)] = index.tolist()
        used = np.flatnonzero(labels >= 0)  # drop pool texts no seed draws
        renumber = np.full(len(pool), -1)
        renumber[used] = np.arange(used.size)
        out[part] = {"texts": cut([pool[i] for i in used]), "labels": labels[used].tolist(),
                     "samples": {s: renumber[np.array(ix)].tolist() for s, ix in samples.items()}}
    with lzma.open(path, "wt", encoding="utf-8", preset=9 | lzma.PRESET_EXTREME) as fh:
        json.dump(out, fh)
    return Path(path).stat().st_size


def load_texts(path):
    with lzma.open(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    if data.get("format") != 1:
        raise ValueError(f"{path} is not a texts file of format 1")
    return data


# ------------------------------------------------------------------------------------------ the run


def plan(data, seeds, dry_run):
    """The texts to encode (one list, train first) and, per part and seed, the rows of each split in it."""
    texts, labels, rows = [], [], {}

    def add(part, index):
        start = len(texts)
        texts.extend(data[part]["texts"][i] for i in index)
        labels.extend(data[part]["labels"][i] for i in index)
        return np.arange(start, len(texts))

    rng = np.random.default_rng(0)  # the dry run's random subsets (both classes in every part)
    for part in ("train", "test"):
        n = len(data[part]["texts"])
        rows[part] = add(part, np.sort(rng.permutation(n)[:DRY[part]]) if dry_run else range(n))
    for part in ("calibration", "ood"):
        samples = {s: np.array(data[part]["samples"][str(s)]) for s in seeds}
        if dry_run:
            samples = {s: np.sort(rng.permutation(ix)[:DRY[part]]) for s, ix in samples.items()}
        used = np.unique(np.concatenate(list(samples.values())))
        where = dict(zip(used.tolist(), add(part, used).tolist()))
        for s, ix in samples.items():
            rows[(part, s)] = np.array([where[i] for i in ix.tolist()])
    return texts, np.array(labels), rows


_WORKER_DATA = {}


def _worker_init(threads):
    torch.set_num_threads(threads)


def _worker_task(npz, rows_train, rows_cal, rows_test, seed, kappa):
    """va_rows and the separation signals for one seed and test set, on the outputs saved in ``npz``.

    ``npz`` is loaded once per worker. Returns the rows, the signal rows
    (:func:`~calibtut.experiments.venn_admit.protection.sentiment_signals`: the
    admissions of Venn-ADMIT by true and by predicted class, with the q/d
    separation, the q = K shares and accuracies as columns), the per-point
    frame and the seconds spent.
    """
    if npz not in _WORKER_DATA:
        with np.load(npz) as f:
            _WORKER_DATA[npz] = (f["r"], f["logits"], f["labels"])
    r, logits, labels = _WORKER_DATA[npz]
    t = time.perf_counter()
    parts = [(r[ix], logits[ix], labels[ix]) for ix in (rows_train, rows_cal, rows_test)]
    out, points = va_rows(*parts, seed, kappa=kappa, points=True)
    signals, admissions = sentiment_signals(points, kappa=kappa)
    admissions["class"] = admissions["class"].astype(str)
    return out, admissions.assign(**signals), points, time.perf_counter() - t


def submit_tasks(pool, npz, name, rows, seeds, kappa):
    futures = {}
    for seed in seeds:
        for dataset in DATASETS:
            test = rows["test"] if dataset == "sentiment" else rows[("ood", seed)]
            fut = pool.submit(_worker_task, npz, rows["train"], rows[("calibration", seed)], test, seed, kappa)
            futures[fut] = (name, dataset, seed)
    return futures


def save_outputs(tmp, name, r, logits, labels):
    path = str(Path(tmp) / f"{name}.npz")
    np.savez(path, r=r, logits=logits, labels=labels)
    return path


def run(args):
    dry = args.dry_run
    device = "cpu" if dry else args.device
    seeds = list(range(DRY["seeds"])) if dry else list(range(args.seeds))
    ft_seeds = seeds[:args.finetune_seeds]
    epochs = DRY["epochs"] if dry else args.epochs
    ft_epochs = DRY["epochs"] if dry else args.finetune_epochs
    max_length = DRY["max_length"] if dry else MAX_WORD_PIECES
    kappa = DRY["kappa"] if dry else args.kappa
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    if device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        log(f"device {torch.cuda.get_device_name(0)}")
    timings = []

    def timed(step, t0, **extra):
        seconds = time.perf_counter() - t0
        timings.append({"step": step, "seconds": seconds, "device": device, **extra})
        log(f"{step}: {seconds:.1f} s {extra if extra else ''}")

    t0 = time.perf_counter()
    data = load_texts(args.texts)
    texts, labels, rows = plan(data, seeds, dry)
    train = rows["train"]
    timed("load texts", t0, n_texts=len(texts))

    # a full-size task holds several GB at its peak: one worker per 10 GB of memory, at most cores - 1
    memory_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    workers = args.workers or max(1, min((os.cpu_count() or 2) - 1, int(memory_gb // 10)))
    ctx = multiprocessing.get_context("spawn")
    tmp = tempfile.mkdtemp(prefix="gpu_venn_admit_")
    results, signals, futures = [], [], {}
    common = {"n_calibration": len(rows[("calibration", seeds[0])]), "kappa": kappa, "hidden": args.filters,
              "max_length": max_length, "device": device}
    pool = concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_init,
                                                  initargs=(args.threads,))
    try:
        # 1. frozen token states
        t0 = time.perf_counter()
        encode_tokens, model_id = minilm_token_encoder(args.model, device=device, max_length=max_length)
        timed("load encoder", t0)
        t0 = time.perf_counter()
        states = token_states(texts, encode_tokens, batch_size=args.encode_batch)
        timed("encode token states (frozen)", t0, n_texts=len(texts), n_pieces=int(states.lengths.sum()))
        del encode_tokens
        t0 = time.perf_counter()
        net = ExemplarCNN(states.dim, 2, filters=args.filters, seed=0)
        losses = fit_exemplar_cnn(net, states.take(train), labels[train], epochs=epochs, batch_size=32,
                                  device=device, seed=0,
                                  progress=lambda e, loss: log(f"  frozen epoch {e}: loss {loss:.4f}"))
        timed("train memory layer (frozen)", t0, epochs=epochs, final_loss=losses[-1])
        t0 = time.perf_counter()
        r, logits = exemplar_outputs(net, states, batch_size=256, device=device)
        timed("exemplars (frozen)", t0)
        del states, net
        npz = save_outputs(tmp, "frozen", r, logits, labels)
        futures.update(submit_tasks(pool, npz, "exemplar", rows, seeds, kappa))
        log(f"submitted {len(futures)} frozen tasks to {workers} workers")

        # 2. joint fine-tuning
        if ft_seeds:
            t0 = time.perf_counter()
            tokenizer, encoder, _ = minilm_transformer(args.model, device=device)
            tokens = TokenizedTexts(tokenizer, texts, max_length=max_length)
            net = ExemplarCNN(encoder.config.hidden_size, 2, filters=args.filters, encoder=encoder, finetune=True,
                              seed=0)
            losses = fit_exemplar_cnn(net, tokens.take(train), labels[train], epochs=ft_epochs, batch_size=32, encoder_lr=args.encoder_lr,
                                      device=device, seed=0,
                                      progress=lambda e, loss: log(f"  fine-tune epoch {e}: loss {loss:.4f}"))
            timed("fine-tune encoder + memory layer", t0, epochs=ft_epochs, final_loss=losses[-1])
            t0 = time.perf_counter()
            r, logits = exemplar_outputs(net, tokens, batch_size=256, device=device)
            timed("exemplars (fine-tuned)", t0, n_texts=len(texts))
            del net, encoder
            npz = save_outputs(tmp, "finetuned", r, logits, labels)
            futures.update(submit_tasks(pool, npz, "exemplar-finetuned", rows, ft_seeds, kappa))

        # 3. the calibration pipeline, as the workers finish; runs.csv is rewritten after each task
        t0 = time.perf_counter()
        left = (3600.0 if dry else args.budget_s) - (time.perf_counter() - _START)
        try:
            for fut in concurrent.futures.as_completed(futures, timeout=max(left, 1.0)):
                name, dataset, seed = futures[fut]
                frame, signal_rows, points, seconds = fut.result()
                signals.append(signal_rows.assign(dataset=dataset, seed=seed, features=name))
                pd.concat(signals, ignore_index=True).to_csv(out_dir / "signals.csv", index=False)
                if seed == seeds[0]:
                    points.assign(dataset=dataset, seed=seed, features=name).to_csv(
                        out_dir / f"points_{name}_{dataset}_seed{seed}.csv.gz", index=False)
                timings.append({"step": f"pipeline {name} {dataset} seed {seed}", "seconds": seconds,
                                "device": "cpu"})
                frame.insert(0, "dataset", dataset)
                frame.insert(1, "seed", seed)
                frame.insert(2, "features", name)
                results.append(frame.assign(representation=REPRESENTATIONS[name],
                                            epochs=ft_epochs if "fine" in name else epochs, **common))
                pd.concat(results, ignore_index=True).to_csv(out_dir / "runs.csv", index=False)
                pd.DataFrame(timings).to_csv(out_dir / "timings.csv", index=False)
                log(f"done {name} {dataset} seed {seed} ({seconds:.1f} s in a worker)")
        except concurrent.futures.TimeoutError:
            log(f"budget of {args.budget_s} s spent: {len(futures) - len(results)} of {len(futures)} tasks dropped")
        timed("pipeline wait after submission", t0, n_tasks=len(results))
    finally:
        for process in list(getattr(pool, "_processes", {}).values()):
            process.terminate()  # tasks still running past the budget
        pool.shutdown(wait=False, cancel_futures=True)

    runs = pd.concat(results, ignore_index=True)
    runs.to_csv(out_dir / "runs.csv", index=False)
    pd.DataFrame(timings).to_csv(out_dir / "timings.csv", index=False)
    meta = {"dry_run": dry, "device": device, "model": model_id, "texts": str(args.texts), "seeds": seeds,
            "finetune_seeds": ft_seeds, "workers": workers, "threads": args.threads,
            "python": platform.python_version(), "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name(0) if device.startswith("cuda") else None,
            "total_seconds": time.perf_counter() - _START}
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=1))
    summary = runs[(runs["table"] == "singletons") & runs["method"].isin(["Venn-ADMIT", "Conf_base", "KNN"])]
    log("accuracy among admitted points, mean over seeds:\n" + summary.groupby(
        ["features", "dataset", "method", "class"])[["accuracy", "share"]].mean().round(3).to_string())
    log(f"wrote {out_dir / 'runs.csv'} ({len(runs)} rows); total {meta['total_seconds']:.0f} s")


REPRESENTATIONS = {"exemplar": "MiniLM token states (frozen) + exemplar memory layer",
                   "exemplar-finetuned": "MiniLM fine-tuned jointly with the exemplar memory layer"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--export-model", metavar="DIR", help="write MiniLM (fp16) to DIR and exit")
    parser.add_argument("--export-texts", metavar="FILE", help="write the texts file (.json.xz) and exit")
    parser.add_argument("--model", metavar="DIR", help="MiniLM folder written by --export-model")
    parser.add_argument("--texts", metavar="FILE", help="texts file written by --export-texts")
    parser.add_argument("--out", metavar="DIR", default="gpu_venn_admit_out", help="output folder")
    parser.add_argument("--dry-run", action="store_true", help="every step on the CPU on a tiny subset")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seeds", type=int, default=len(SEEDS), help="calibration seeds 0..n-1 (at most 10)")
    parser.add_argument("--finetune-seeds", type=int, default=len(SEEDS), help="seeds of the fine-tuned run")
    parser.add_argument("--filters", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=10, help="epochs of the frozen run's memory layer")
    parser.add_argument("--finetune-epochs", type=int, default=3)
    parser.add_argument("--encoder-lr", type=float, default=2e-5)
    parser.add_argument("--kappa", type=int, default=1000)
    parser.add_argument("--encode-batch", type=int, default=256)
    parser.add_argument("--workers", type=int, default=0,
                        help="CPU worker processes (default: cores - 1, at most one per 10 GB of memory)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    parser.add_argument("--budget-s", type=float, default=300.0,
                        help="stop waiting for pipeline tasks after this many seconds in all (finished ones are "
                             "kept; not in a dry run)")
    args = parser.parse_args(argv)
    if args.export_model:
        size = export_minilm(args.export_model)
        print(f"wrote {args.export_model}: {size / 2**20:.1f} MiB", flush=True)
        return
    if args.export_texts:
        size = export_texts(args.export_texts)
        print(f"wrote {args.export_texts}: {size / 2**20:.2f} MiB", flush=True)
        return
    if not (args.model and args.texts):
        parser.error("--model and --texts are needed (or --export-model / --export-texts)")
    run(args)


if __name__ == "__main__":
    main()
