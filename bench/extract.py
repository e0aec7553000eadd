"""Extraction benchmark: Corral's web_fetch extraction against plain trafilatura.

Data: the article-extraction benchmark (Scrapinghub, MIT), 181 gzipped HTML pages with the
article body of each in ground-truth.json. Score: as that benchmark's evaluate.py defines it:

* tokens are the runs of word characters (``\\w+``) in a text;
* a page's shingles are its 4-token windows, counted as a multiset; true positives are the
  shingles both texts share (with multiplicity), false positives the extra predicted ones,
  false negatives the missed true ones; the three are divided by their sum so that every
  page weighs the same;
* precision and recall are averaged over the pages (a page with nothing predicted counts
  for recall only, one with nothing true for precision only), and F1 is computed from the
  two averages.

The baseline is ``trafilatura.extract(html)`` with default settings on the page decoded as
UTF-8, as the benchmark runs it. Ours is ``corral.web.extract(body, "text/html", url=...,
format=...)`` from the raw bytes, charset detection included. The markdown format, the
default of web_fetch, is scored after stripping its markup (headings, emphasis, list and
table syntax, escapes, link targets); the text format is scored as it is.

Run: ``.venv/bin/python bench/extract.py [--data DIR] [--formats markdown,text]``.

The data is found, in this order, at ``--data DIR``, at ``$CORRAL_BENCH_DATA/article-extraction``
and at ``bench/data/article-extraction`` in this repository (not committed: download the
benchmark's ``html/`` and ``ground-truth.json`` there). Without it the bench says where it
looked and exits 2 (skipped); it exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import trafilatura

from corral.web import extract
from outcome import Figure, finish, skip

DATA_NAME = "article-extraction"
REPO_DATA = Path(__file__).resolve().parent / "data" / DATA_NAME
DATA_ENV = "CORRAL_BENCH_DATA"
TARGET_F1 = 0.965
TARGET_MS = 25.0
SHINGLE = 4

_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Page:
    key: str
    url: str
    body: bytes
    truth: str


@dataclass(frozen=True, slots=True)
class Score:
    f1: float
    precision: float
    recall: float
    page_f1: float
    """Mean of the per-page F1 values, shown for reference only."""


@dataclass(frozen=True, slots=True)
class Run:
    name: str
    score: Score
    ms_per_page: float
    median_ms: float


def load(data: Path) -> list[Page]:
    truth = json.loads((data / "ground-truth.json").read_text(encoding="utf-8"))
    pages = []
    for key in sorted(truth):
        body = gzip.decompress((data / "html" / f"{key}.html.gz").read_bytes())
        pages.append(Page(key, truth[key].get("url", ""), body, truth[key].get("articleBody", "")))
    return pages


def shingles(text: str) -> Counter[tuple[str, ...]]:
    tokens = _WORD.findall(text or "")
    windows = (tuple(tokens[i : i + SHINGLE]) for i in range(max(1, len(tokens) - SHINGLE + 1)))
    return Counter(window for window in windows if window)


def page_counts(truth: str, predicted: str) -> tuple[float, float, float]:
    """Normalised (tp, fp, fn) of one page."""
    expected, got = shingles(truth), shingles(predicted)
    tp = sum((expected & got).values())
    fp = sum((got - expected).values())
    fn = sum((expected - got).values())
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total else (0.0, 0.0, 0.0)


def _precision(tp: float, fp: float, fn: float) -> float:
    if fp == 0 and fn == 0:
        return 1.0
    return 0.0 if tp == 0 and fp == 0 else tp / (tp + fp)


def _recall(tp: float, fp: float, fn: float) -> float:
    if fp == 0 and fn == 0:
        return 1.0
    return 0.0 if tp == 0 and fn == 0 else tp / (tp + fn)


def score(pages: list[Page], predictions: dict[str, str]) -> Score:
    counts = [page_counts(page.truth, predictions[page.key]) for page in pages]
    precision = statistics.mean(_precision(*c) for c in counts if c[0] + c[1] > 0)
    recall = statistics.mean(_recall(*c) for c in counts if c[0] + c[2] > 0)
    per_page = []
    for c in counts:
        p, r = _precision(*c), _recall(*c)
        per_page.append(2 * p * r / (p + r) if p + r else 0.0)
    return Score(
        f1=2 * precision * recall / (precision + recall),
        precision=precision,
        recall=recall,
        page_f1=statistics.mean(per_page),
    )


_FENCE = re.compile(r"^\s*(```|~~~).*$", re.M)
_IMAGE_OR_LINK = re.compile(r"!?\[((?:\\.|[^\]\\])*)\]\((?:<[^>]*>|[^)\s]*)(?:\s+\"[^\"]*\")?\)")
_LINE_SYNTAX = re.compile(r"^[ \t]*(?:>[ \t]?)*(?:#{1,6}[ \t]+|[-*+][ \t]+|\d+[.)][ \t]+)?", re.M)
_TABLE_RULE = re.compile(r"^\s*\|?(?:\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*$", re.M)
_EMPHASIS = re.compile(r"(\*\*|__|\*|~~|`)")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~=$])")


def strip_markdown(text: str) -> str:
    """The plain text a reader sees in rendered Markdown."""
    text = _FENCE.sub("", text)
    text = _IMAGE_OR_LINK.sub(r"\1", text)
    text = _TABLE_RULE.sub("", text)
    text = _LINE_SYNTAX.sub("", text)
    text = text.replace(" | ", " ").replace("| ", "").replace(" |", "")
    text = _EMPHASIS.sub("", text)
    return _ESCAPE.sub(r"\1", text)


def timed(
    name: str, pages: list[Page], run: Callable[[Page], str], post: Callable[[str], str]
) -> Run:
    run(pages[0])  # warm-up: imports and first-call caches, for every contender alike
    predictions: dict[str, str] = {}
    durations = []
    for page in pages:
        started = time.perf_counter()
        predictions[page.key] = run(page)
        durations.append(time.perf_counter() - started)
    texts = {key: post(text) for key, text in predictions.items()}
    return Run(
        name=name,
        score=score(pages, texts),
        ms_per_page=1000 * sum(durations) / len(pages),
        median_ms=1000 * statistics.median(durations),
    )


def baseline(page: Page) -> str:
    html = page.body.decode("utf-8", errors="replace")  # the benchmark reads pages as UTF-8
    return trafilatura.extract(html) or ""


def ours(fmt: str) -> Callable[[Page], str]:
    def run(page: Page) -> str:
        return extract(page.body, "text/html", url=page.url, format=fmt)

    return run


def find_data(given: Path | None) -> Path | None:
    """The first of --data, $CORRAL_BENCH_DATA/article-extraction and the repository's
    bench/data/article-extraction that holds ground-truth.json."""
    candidates = [given] if given is not None else []
    if os.environ.get(DATA_ENV):
        candidates.append(Path(os.environ[DATA_ENV]) / DATA_NAME)
    candidates.append(REPO_DATA)
    return next((c for c in candidates if (c / "ground-truth.json").is_file()), None)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None, help="the benchmark's folder")
    parser.add_argument("--formats", default="markdown,text", help="comma-separated formats")
    args = parser.parse_args(argv)
    data = find_data(args.data)
    if data is None:
        looked = [str(args.data)] if args.data else []
        looked += [f"${DATA_ENV}/{DATA_NAME}"] if os.environ.get(DATA_ENV) else []
        where = ", ".join([*looked, str(REPO_DATA)])
        skip(
            "extract",
            f"no article-extraction data (ground-truth.json) at {where}; "
            f"pass --data DIR, set {DATA_ENV}, or put the benchmark there",
        )
    pages = load(data)
    print(f"{len(pages)} pages from {data}")
    base = timed("trafilatura (default)", pages, baseline, lambda text: text)
    runs = [base]
    for fmt in args.formats.split(","):
        post = strip_markdown if fmt == "markdown" else (lambda text: text)
        label = f"corral {fmt}" + (" (markup stripped)" if fmt == "markdown" else "")
        runs.append(timed(label, pages, ours(fmt), post))
    print(f"{'extractor':<36} {'F1':>6} {'P':>6} {'R':>6} {'pageF1':>6} {'ms/pg':>6} {'med':>5}")
    for run in runs:
        s = run.score
        print(
            f"{run.name:<36} {s.f1:6.4f} {s.precision:6.4f} {s.recall:6.4f} {s.page_f1:6.4f} "
            f"{run.ms_per_page:6.1f} {run.median_ms:5.1f}"
        )
    print()
    figures = []
    for run in runs[1:]:
        figures.append(
            Figure(
                name=f"{run.name}: F1",
                value=run.score.f1,
                unit="",
                baseline=base.score.f1,
                target=f">= {TARGET_F1}",
                met=run.score.f1 >= TARGET_F1,
            )
        )
        figures.append(
            Figure(
                name=f"{run.name}: ms/page",
                value=run.ms_per_page,
                unit="ms",
                baseline=base.ms_per_page,
                target=f"<= {TARGET_MS:.0f} ms",
                met=run.ms_per_page <= TARGET_MS,
            )
        )
    finish("extract", figures)


if __name__ == "__main__":
    main()
