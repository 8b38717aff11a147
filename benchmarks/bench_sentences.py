"""Sentence splitters for ``--split-sentences``, on real documents, one core, same run: documents/s, sentences/s
and MB/s of each splitter that is installed (sentencex, tokenmill's choice, through ``split_documents`` as
prepare runs it; blingfire, pysbd and NLTK's punkt as the alternatives, each skipped with the reason when it
cannot run here: punkt needs its model downloaded). Then prepare with Megatron's flags on the same documents
as JSONL, with and without ``--split-sentences``: what splitting adds to a whole run.

The documents are those of the LM filter tests (tests/text/lm_documents.py: prose, markdown and
reStructuredText that installed packages ship, cut into documents).

    python benchmarks/bench_sentences.py --docs 3000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.text.lm_documents import documents  # noqa: E402
from tokenmill.prepare import build_config, prepare  # noqa: E402
from tokenmill.text.sentences import make_splitter, split_documents  # noqa: E402
from tokenmill.vocab.tokenizer import train_tokenizer  # noqa: E402


def alternatives() -> dict[str, Callable[[str], list[str]] | str]:
    """Each alternative splitter's function, or why it cannot run here."""
    found: dict[str, Callable[[str], list[str]] | str] = {}
    try:
        import blingfire

        found["blingfire"] = lambda text: blingfire.text_to_sentences(text).split("\n")
    except ImportError:
        found["blingfire"] = "not installed (pip install blingfire)"
    try:
        import pysbd

        segmenter = pysbd.Segmenter(language="en", clean=False)
        found["pysbd"] = segmenter.segment
    except ImportError:
        found["pysbd"] = "not installed (pip install pysbd)"
    try:
        import nltk

    except ImportError:
        found["nltk punkt"] = "not installed (pip install nltk; its punkt model is a separate download)"
        return found
    try:
        punkt = nltk.data.load("tokenizers/punkt/english.pickle")
        found["nltk punkt"] = punkt.tokenize
    except LookupError:
        found["nltk punkt"] = "its punkt model is not here (a separate download: not offline)"
    return found


def timed(name: str, run: Callable[[list[str]], int], docs: list[str]) -> None:
    megabytes = sum(len(d.encode("utf-8")) for d in docs) / 1e6
    run(docs[:20])  # tables and patterns built outside the timing
    started = time.perf_counter()
    sentences = run(docs)
    seconds = time.perf_counter() - started
    print(f"| {name} | {len(docs)} | {len(docs) / seconds:,.0f} | {sentences / seconds:,.0f} | "
          f"{megabytes / seconds:.2f} |")


def splitters(docs: list[str], peer_docs: int) -> None:
    print("| splitter | documents | documents/s | sentences/s | MB/s |\n|---|---|---|---|---|")
    ours = make_splitter("sentencex", "english")
    timed("sentencex (tokenmill's split_documents)", lambda d: len(split_documents(d, ours)[0]), docs)
    for name, split in alternatives().items():
        if isinstance(split, str):
            print(f"| {name} | skipped: {split} | | | |")
            continue
        sample = docs[:peer_docs] if name == "pysbd" else docs  # pysbd is ~200x slower: a slice of the same
        timed(name, lambda d, split=split: sum(len(split(t)) for t in d), sample)


def whole_runs(docs: list[str], workers: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-sentences-"))
    corpus = folder / "docs.jsonl"
    corpus.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs), encoding="utf-8")
    model = folder / "tokenizer.json"
    train_tokenizer("hf", docs[:2000], {"kind": "byte-level-bpe", "vocab_size": 8000}, model)
    print("\n| prepare (Megatron flags, HF byte-level BPE) | seconds | encode stage | binarize stage | sequences |"
          "\n|---|---|---|---|---|")
    for split in (False, True):
        settings = {"input": str(corpus), "output_prefix": str(folder / f"out{int(split)}" / "lm"),
                    "tokenizer_type": "HuggingFaceTokenizer", "tokenizer_model": str(model), "append_eod": True,
                    "split_sentences": split, "workers": workers}
        started = time.perf_counter()
        summary = prepare(build_config(settings), progress=False)
        seconds = time.perf_counter() - started
        sequences = summary.splits["train"]["langs"]["text"]["sentences"]
        stages = summary.stage_seconds
        print(f"| {'--split-sentences' if split else 'documents'} | {seconds:.2f} | "
              f"{stages.get('encode.train.text', 0):.2f} | {stages.get('binarize.train.text', 0):.2f} | {sequences} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--pysbd-docs", type=int, default=300, help="pysbd is slow: time it on this many")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    docs = documents(args.docs)
    splitters(docs, args.pysbd_docs)
    whole_runs(docs, args.workers)


if __name__ == "__main__":
    main()
