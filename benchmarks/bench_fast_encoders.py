"""The encoders alone: which one reproduces the reference library's ids, and how fast, on LM documents.

Corpus: ``tok_corpus.jsonl_corpus`` (``--mb`` MB of JSONL, ~85% English, ~15% Chinese, median ~1.7 kB a
document), parsed before timing. Models: a byte-level BPE ``tokenizer.json`` of ``--vocab`` ids trained by
tokenmill's hf backend on the first 5,000 documents (as ``bench_lm_prepare.py``), and the same BPE written as
tiktoken ranks (:func:`tokenmill.vocab.tiktoken_ranks.ranks_from_byte_level_bpe`, cl100k's split pattern is
not the model's, so the tiktoken pair uses GPT-2's pattern on both sides).

Timed (encode calls only, ``--batch`` documents a call, all cores unless ``--threads``), median of
``--rounds``:

* ``tokenizers`` ``encode_batch_fast`` (the hf reference) against gigatoken's ``encode_batch`` on the
  ``tokenizer.json``;
* ``tiktoken`` ``encode_ordinary_batch`` (the tiktoken reference) against gigatoken's ``encode_batch`` on the
  ranks file.

Every id list is compared with the reference's; the table says how many documents differ.

    python benchmarks/bench_fast_encoders.py --mb 40
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_lm_prepare import tokenizer_model  # noqa: E402
from tok_corpus import DATA, jsonl_corpus  # noqa: E402


def documents(files: list[Path]) -> list[str]:
    docs = []
    for path in files:
        with open(path, encoding="utf-8") as handle:
            docs.extend(json.loads(line)["text"] for line in handle)
    return docs


def timed(encode, docs: list[str], batch: int) -> tuple[float, list]:
    out: list = []
    start = time.perf_counter()
    for i in range(0, len(docs), batch):
        out.extend(encode(docs[i : i + batch]))
    return time.perf_counter() - start, out


def differing(a: list, b: list) -> int:
    return sum(1 for x, y in zip(a, b, strict=True) if list(x) != list(y))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=40)
    parser.add_argument("--vocab", type=int, default=32_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import gigatoken
    import tiktoken
    import tokenizers

    from tokenmill.vocab.tiktoken_backend import PRESETS
    from tokenmill.vocab.tiktoken_ranks import ranks_from_byte_level_bpe, write_ranks

    files = jsonl_corpus(args.mb, 2)
    docs = documents(files)
    mb = sum(len(d.encode("utf-8")) for d in docs) / 1e6
    model = tokenizer_model(files[0], args.vocab)
    ranks_path = DATA / "lm" / f"bbpe-{args.vocab}.tiktoken"
    ranks = ranks_from_byte_level_bpe(model)
    if not ranks_path.exists():
        write_ranks(ranks, ranks_path)
    hf = tokenizers.Tokenizer.from_file(str(model))
    giga_hf = gigatoken.Tokenizer(str(model))
    tik = tiktoken.Encoding("bbpe", pat_str=PRESETS["gpt2"][0], mergeable_ranks=ranks, special_tokens={})
    giga_tik = gigatoken.Tokenizer.from_tiktoken(ranks_path, pretokenizer="gpt2", special_tokens={})
    sides = {
        "tokenizers encode_batch_fast": lambda b: [e.ids for e in hf.encode_batch_fast(b, add_special_tokens=False)],
        "gigatoken (tokenizer.json)": giga_hf.encode_batch_list,
        "tiktoken encode_ordinary_batch": lambda b: tik.encode_ordinary_batch(b, num_threads=os.cpu_count()),
        "gigatoken (tiktoken ranks)": giga_tik.encode_batch_list,
    }
    reference = {"gigatoken (tokenizer.json)": "tokenizers encode_batch_fast",
                 "gigatoken (tiktoken ranks)": "tiktoken encode_ordinary_batch"}
    seconds: dict[str, list[float]] = {name: [] for name in sides}
    ids: dict[str, list] = {}
    for _ in range(args.rounds):
        for name, encode in sides.items():
            s, out = timed(encode, docs, args.batch)
            seconds[name].append(s)
            ids[name] = out
    tokens = sum(map(len, ids["tokenizers encode_batch_fast"]))
    print(f"{mb:.1f} MB of text, {len(docs):,} documents, {tokens:,} tokens, vocabulary {args.vocab:,}, "
          f"{os.cpu_count()} cores, median of {args.rounds}, load {os.getloadavg()}\n")
    print("| encoder | s | MB/s | x tokenizers | documents differing from its reference |")
    print("|---|---:|---:|---:|---|")
    base = statistics.median(seconds["tokenizers encode_batch_fast"])
    for name in sides:
        s = statistics.median(seconds[name])
        ref = reference.get(name)
        diff = f"{differing(ids[name], ids[ref]):,} of {len(docs):,} (vs {ref})" if ref else "(reference)"
        print(f"| {name} | {s:.2f} | {mb / s:.1f} | {base / s:.1f}x | {diff} |")


if __name__ == "__main__":
    main()
