"""`tokenmill prepare` against its floor (SentencePiece batch encode) and against the usual
pipeline (piece text from SentencePiece + `fairseq-preprocess --workers 2`), side by side.

Corpus: synthetic but real-looking parallel text — two Zipf-distributed pseudo-word lexicons
(50k words each, lengths 2-12 letters), sentence lengths log-normal (median ~18 words), the
target length correlated with the source. A 32k unigram model is trained once (not timed) and
given to every timed run with --spm-model. Each timed run is a fresh process; peak RSS is the
process's ru_maxrss.

    python benchmarks/bench_prepare.py --pairs 1000000 --pairs 4000000   # full
    python benchmarks/bench_prepare.py --quick                           # 50k pairs smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _peer import how_to_get, peer_python

DATA = Path(__file__).resolve().parent / ".data" / "prepare"
LETTERS = np.array(list("abcdefghijklmnopqrstuvwxyz"))


def lexicon(rng: np.random.Generator, size: int) -> np.ndarray:
    lengths = rng.integers(2, 13, size=size)
    letters = rng.choice(LETTERS, size=int(lengths.sum()))
    cuts = np.cumsum(lengths)[:-1]
    return np.array(["".join(w) for w in np.split(letters, cuts)], dtype=object)


def make_corpus(pairs: int, seed: int = 0) -> Path:
    """train.{en,de} with `pairs` lines in DATA/<pairs>/ (cached)."""
    out = DATA / str(pairs)
    if (out / "train.de").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    src_words, tgt_words = lexicon(rng, 50_000), lexicon(rng, 50_000)
    ranks = np.arange(1, 50_001)
    zipf = 1.0 / ranks**1.1
    zipf /= zipf.sum()
    block = 100_000
    with open(out / "train.en.tmp", "w") as src_file, open(out / "train.de.tmp", "w") as tgt_file:
        for start in range(0, pairs, block):
            n = min(block, pairs - start)
            src_len = np.clip(rng.lognormal(np.log(18), 0.6, size=n).astype(int), 1, 200)
            tgt_len = np.clip((src_len * rng.normal(1.1, 0.15, size=n)).astype(int), 1, 220)
            for lengths, words, handle in ((src_len, src_words, src_file), (tgt_len, tgt_words, tgt_file)):
                flat = words[rng.choice(50_000, size=int(lengths.sum()), p=zipf)]
                cuts = np.cumsum(lengths)[:-1]
                handle.write("".join(" ".join(s) + "\n" for s in np.split(flat, cuts)))
    os.replace(out / "train.en.tmp", out / "train.en")
    os.replace(out / "train.de.tmp", out / "train.de")
    return out


def spm_model(corpus: Path, vocab: int) -> Path:
    model = DATA / f"spm{vocab}.model"
    if not model.exists():
        out = DATA / "spm-train"
        run_timed([sys.executable, "-m", "tokenmill", "prepare", "-q", "--source-lang", "en", "--target-lang",
                   "de", "--trainpref", str(corpus / "train"), "--destdir", str(out), "--vocab-size", str(vocab),
                   "--input-sentence-size", "300000", "--character-coverage", "1.0", "--joined-dictionary"])
        shutil.copyfile(out / "spm.model", model)
    return model


def run_timed(cmd: list[str], env: dict | None = None) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, max(peak, before) / 1024  # ru_maxrss of the largest child so far; runs go small to large


def peak_rss(cmd: list[str]) -> tuple[float, float]:
    """Seconds and this command's own peak RSS (MB), via /usr/bin/time when present."""
    if shutil.which("time") or Path("/usr/bin/time").exists():
        start = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-f", "MAXRSS %M", *cmd], capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr[-3000:]}")
        rss = [line for line in proc.stderr.splitlines() if line.startswith("MAXRSS ")]
        return seconds, int(rss[-1].split()[1]) / 1024
    return run_timed(cmd)


SPM_FLOOR = """
import sys, time, sentencepiece as spm
sp = spm.SentencePieceProcessor(model_file=sys.argv[1])
lines = []
for path in sys.argv[2:]:
    with open(path, encoding="utf-8") as f:
        lines.append(f.read().split("\\n")[:-1])
start = time.perf_counter()
for side in lines:
    for i in range(0, len(side), 65536):
        sp.encode(side[i:i + 65536], num_threads=2)
print(time.perf_counter() - start)
"""

SPM_TO_TEXT = """
import sys, sentencepiece as spm
sp = spm.SentencePieceProcessor(model_file=sys.argv[1])
for src, dst in zip(sys.argv[2::2], sys.argv[3::2]):
    with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as out:
        lines = f.read().split("\\n")[:-1]
        for i in range(0, len(lines), 65536):
            out.write("".join(" ".join(p) + "\\n" for p in sp.encode(lines[i:i + 65536], out_type=str, num_threads=2)))
"""


def bench(pairs: int, vocab: int, with_fairseq: bool) -> dict:
    corpus = make_corpus(pairs)
    model = spm_model(make_corpus(min(pairs, 1_000_000)), vocab)
    work = DATA / "runs" / str(pairs)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    row: dict = {"pairs": pairs}
    # tokenmill prepare with the given model (cleaning on: normalize + filters + dedup as defaults)
    out = work / "tokenmill"
    cmd = [sys.executable, "-m", "tokenmill", "prepare", "-q", "--source-lang", "en", "--target-lang", "de",
           "--trainpref", str(corpus / "train"), "--destdir", str(out), "--spm-model", str(model),
           "--joined-dictionary", "--workers", "2"]
    row["tokenmill_s"], row["tokenmill_rss_mb"] = peak_rss(cmd)
    # the floor: SentencePiece's own batch encode of the same (cleaned) lines, 2 threads
    cleaned = [str(out / ".work" / "clean" / f"train.{lang}") for lang in ("en", "de")]
    floor = subprocess.run([sys.executable, "-c", SPM_FLOOR, str(model), *cleaned], capture_output=True, text=True)
    row["spm_encode_s"] = float(floor.stdout.strip())
    # the usual pipeline: piece text, then fairseq-preprocess --workers 2 building a joined dictionary
    python = peer_python("fairseq") if with_fairseq else None
    if python:
        pieces = work / "pieces"
        pieces.mkdir()
        args = []
        for lang in ("en", "de"):
            args += [str(corpus / f"train.{lang}"), str(pieces / f"train.{lang}")]
        t_text, _ = peak_rss([sys.executable, "-c", SPM_TO_TEXT, str(model), *args])
        t_fs, rss_fs = peak_rss([python, "-m", "fairseq_cli.preprocess", "--source-lang", "en", "--target-lang",
                                 "de", "--trainpref", str(pieces / "train"), "--destdir", str(work / "fairseq"),
                                 "--joined-dictionary", "--workers", "2", "--dataset-impl", "mmap"])
        row["spm_text_s"], row["fairseq_preprocess_s"], row["fairseq_rss_mb"] = t_text, t_fs, rss_fs
        row["fairseq_total_s"] = t_text + t_fs
    elif with_fairseq:
        print(f"fairseq peer missing: {how_to_get('fairseq')}", file=sys.stderr)
    shutil.rmtree(work, ignore_errors=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, action="append")
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-fairseq", action="store_true", help="skip the fairseq side (it is slow)")
    args = parser.parse_args()
    sizes = args.pairs or ([50_000] if args.quick else [1_000_000, 4_000_000])
    vocab = 4000 if args.quick else args.vocab
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"machine: {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}")
    rows = []
    for i, pairs in enumerate(sizes):
        rows.append(bench(pairs, vocab, with_fairseq=not args.no_fairseq and i == 0))
        print(json.dumps(rows[-1]))
    header = ("| pairs | tokenmill prepare | spm encode (floor) | ratio | spm text + fairseq-preprocess "
              "| speed-up | peak RSS |")
    print("\n" + header)
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        fairseq = f"{row['fairseq_total_s']:.1f} s" if "fairseq_total_s" in row else "-"
        speedup = f"{row['fairseq_total_s'] / row['tokenmill_s']:.1f}x" if "fairseq_total_s" in row else "-"
        ratio = row["tokenmill_s"] / row["spm_encode_s"]
        print(f"| {row['pairs']:,} | {row['tokenmill_s']:.1f} s | {row['spm_encode_s']:.1f} s | {ratio:.2f}x | "
              f"{fairseq} | {speedup} | {row['tokenmill_rss_mb']:.0f} MB |")


if __name__ == "__main__":
    main()
