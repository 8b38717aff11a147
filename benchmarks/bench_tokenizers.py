"""`tokenmill prepare` with every tokenizer backend against that backend's own batch encode of the
same cleaned lines (the floor), side by side in one run.

Corpus (``tok_corpus.parallel_corpus``, seeded, cached in ``benchmarks/.data/tokenizers/``):
real-looking English-Chinese pairs with ~5% duplicate pairs, a few empty sides, whitespace runs and
control characters; ``--tokenizer none`` reads the same pairs word-segmented. Models are made once
per corpus size and vocabulary, not timed: a SentencePiece unigram model and a Hugging Face
byte-level BPE (both trained by ``tokenmill prepare``), tiktoken ranks converted from that BPE
(``tokenmill.vocab.tiktoken_ranks``: GPT-2 byte alphabet -> bytes, ranks in id order without the
special token; cl100k split pattern, ``<|endoftext|>`` after the last rank), and a T2T subword
vocabulary (built by ``prepare --approx-vocab-size``; every backend is given its model, so the runs
compare encoding pipelines; T2T's vocabulary build is ``bench_t2t_subword.py``'s).

Timed, each a fresh process, backends in turn, ``--reps`` rounds (medians reported):

* ``tokenmill prepare --source-lang en --target-lang zh --trainpref ... --tokenizer B
  --tokenizer-model M --workers 2`` (default cleaning: normalize, drop empty, dedup; fairseq
  dictionaries for sentencepiece and none), wall seconds of the whole command and the largest
  process's peak RSS (``/usr/bin/time``); the per-stage seconds come from ``manifest.json``.
* the same command with ``--no-report`` (no ``report.html``, which neither the floor nor
  fairseq-preprocess makes), into another folder, right after the floor (not with ``--skip-no-report``).
* the floor, right after it: the backend library's own batch encode of ``DESTDIR/.work/clean/train.
  {en,zh}`` (the lines prepare kept), in prepare's chunks of 65,536 lines, all cores, timed (wall and
  CPU seconds) around the encode calls only (lines already in memory): SentencePiece ``encode(list, num_threads=2)``,
  ``tokenizers`` ``encode_batch_fast`` (and ``encode_batch``, with offsets, for reference), tiktoken
  ``encode_ordinary_batch(num_threads=2)``, the T2T subword encoder's ``encode_batch`` (tokenmill's
  implementation of T2T's encoder: T2T has no batch encode), and for whitespace input ``str.split`` +
  fairseq dictionary lookup (single thread: no library does it on threads). Its token count is
  checked against the store's.

Every side runs with compiled modules (``PYTHONDONTWRITEBYTECODE`` is dropped and tokenmill's modules are
compiled first, as an installed package is): no side pays for compiling its sources on each start.

With ``--baseline SRC`` (the ``src`` folder of another checkout, e.g. a ``git worktree`` of an earlier
commit), every round also runs that tree's ``prepare`` on the same input (``PYTHONPATH=SRC``), right
before or after this tree's (the order alternates between rounds), and checks that both wrote the same
stores and dictionaries (the manifests' checksums).

    python benchmarks/bench_tokenizers.py                  # 300k pairs, 32k vocabularies, 3 rounds
    python benchmarks/bench_tokenizers.py --quick          # 20k pairs, 4k vocabularies, 1 round
    python benchmarks/bench_tokenizers.py --backends sentencepiece,none --baseline /tmp/base/src
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _procstat import run_measured  # noqa: E402
from tok_corpus import DATA, parallel_corpus  # noqa: E402

from tokenmill.vocab.tiktoken_ranks import ranks_from_byte_level_bpe, write_ranks  # noqa: E402

BACKENDS = ("sentencepiece", "hf", "tiktoken", "t2t-subword", "none")
CHUNK = 65536

FLOOR = r"""
import json, sys, time
backend, model, threads, CHUNK, files = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
sides = []
for path in files:
    with open(path, encoding="utf-8") as handle:
        sides.append(handle.read().split("\n")[:-1])
if backend == "sentencepiece":
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=model)
    encoders = {"encode(list, num_threads)": lambda b: sp.encode(b, num_threads=threads)}
elif backend == "hf":
    import tokenizers
    tok = tokenizers.Tokenizer.from_file(model)
    encoders = {"encode_batch_fast": lambda b: [e.ids for e in tok.encode_batch_fast(b, add_special_tokens=False)],
                "encode_batch": lambda b: [e.ids for e in tok.encode_batch(b, add_special_tokens=False)]}
elif backend == "tiktoken":
    import base64, tiktoken
    from tokenmill.vocab.tiktoken_backend import CL100K_PATTERN
    ranks = {}
    for line in open(model, "rb").read().split(b"\n"):
        if line.strip():
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    enc = tiktoken.Encoding("floor", pat_str=CL100K_PATTERN, mergeable_ranks=ranks,
                            special_tokens={"<|endoftext|>": len(ranks)})
    from concurrent.futures import ThreadPoolExecutor
    pool = ThreadPoolExecutor(threads)
    def shares(b):  # one contiguous share per thread (encode_ordinary_batch maps line by line)
        cut = [len(b) * k // threads for k in range(threads + 1)]
        parts = pool.map(lambda a, z: [enc.encode_ordinary(line) for line in b[a:z]], cut[:-1], cut[1:])
        return [ids for part in parts for ids in part]
    encoders = {"encode_ordinary_batch": lambda b: enc.encode_ordinary_batch(b, num_threads=threads),
                "encode_ordinary, a share per thread": shares}
else:
    from tokenmill.vocab.tokenizer import load_tokenizer
    tok = load_tokenizer("t2t-subword" if backend == "t2t-subword" else "whitespace", model)
    name = "T2T encoder encode_batch" if backend == "t2t-subword" else "split + dictionary lookup"
    encoders = {name: lambda b: tok.encode_batch(b, num_threads=threads)}
seconds = {name: 0.0 for name in encoders}
cpu = {name: 0.0 for name in encoders}  # CPU seconds of this process (every thread) in each call
tokens = {name: 0 for name in encoders}
order = list(encoders)
for side in sides:
    for i in range(0, len(side), CHUNK):
        batch = side[i:i + CHUNK]
        order.reverse()  # alternate which call goes first
        for name in order:
            start, started_cpu = time.perf_counter(), time.process_time()
            out = encoders[name](batch)
            seconds[name] += time.perf_counter() - start
            cpu[name] += time.process_time() - started_cpu
            tokens[name] += int(out[1].sum()) if isinstance(out, tuple) else sum(map(len, out))
            del out
print(json.dumps({"seconds": seconds, "cpu": cpu, "tokens": tokens, "lines": sum(map(len, sides))}))
"""


def tokenmill_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "tokenmill", "prepare", "-q", *args]


def train_with_prepare(corpus: Path, out: Path, args: list[str]) -> Path:
    shutil.rmtree(out, ignore_errors=True)
    cmd = tokenmill_cmd("--source-lang", "en", "--target-lang", "zh", "--trainpref", str(corpus / "train"),
                        "--destdir", str(out), "--workers", "2", *args)
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"training failed: {' '.join(cmd)}\n{done.stderr[-3000:]}")
    return out


def models(corpus: Path, pairs: int, vocab: int, t2t_vocab: int, backends: list[str]) -> dict[str, Path]:
    """The models of ``backends`` given to prepare (cached): trained or built through prepare, not timed (the
    T2T vocabulary too: its build is timed by ``bench_t2t_subword.py`` against T2T's own builder)."""
    root = DATA / "tokenizers" / f"models-{pairs}-{vocab}"
    root.mkdir(parents=True, exist_ok=True)
    found = {"sentencepiece": root / "spm.model", "hf": root / "tokenizer.json", "tiktoken": root / "bpe.tiktoken"}
    sample = str(min(pairs, 300_000))
    if not found["sentencepiece"].exists() and "sentencepiece" in backends:
        print("training SentencePiece (not timed) ...", file=sys.stderr)
        out = train_with_prepare(corpus, root / "train-spm", ["--vocab-size", str(vocab), "--input-sentence-size",
                                                              sample, "--joined-dictionary"])
        shutil.copyfile(out / "spm.model", found["sentencepiece"])
    if not found["hf"].exists() and {"hf", "tiktoken"} & set(backends):
        print("training byte-level BPE (not timed) ...", file=sys.stderr)
        out = train_with_prepare(corpus, root / "train-hf", ["--tokenizer", "hf", "--vocab-size", str(vocab),
                                                             "--input-sentence-size", sample])
        shutil.copyfile(out / "tokenizer.json", found["hf"])
    if not found["tiktoken"].exists() and "tiktoken" in backends:
        write_ranks(ranks_from_byte_level_bpe(found["hf"]), found["tiktoken"])
    found["t2t-subword"] = root / f"vocab-{t2t_vocab}.subwords"
    if not found["t2t-subword"].exists() and "t2t-subword" in backends:
        print("building the T2T subword vocabulary (not timed) ...", file=sys.stderr)
        out = train_with_prepare(corpus, root / "train-t2t", ["--tokenizer", "t2t-subword", "--approx-vocab-size",
                                                              str(t2t_vocab)])
        shutil.copyfile(out / "vocab.subwords", found["t2t-subword"])
    for name in ("train-spm", "train-hf", "train-t2t"):
        shutil.rmtree(root / name, ignore_errors=True)
    return found


def store_tokens(destdir: Path) -> tuple[int, int]:
    """(tokens, items) of the train stores of both languages."""
    from tokenmill.store import IndexedDataset

    tokens = items = 0
    for lang in ("en", "zh"):
        ds = IndexedDataset(destdir / f"train.en-zh.{lang}")
        tokens += len(ds.tokens)
        items += len(ds)
    return tokens, items


def stage_groups(stages: dict[str, dict]) -> dict[str, float]:
    groups: dict[str, float] = {}
    for name, info in stages.items():
        group = name.split(".")[0]
        groups[group] = groups.get(group, 0.0) + float(info["seconds"])
    return groups


def prepare_args(backend: str, corpus: Path, model: Path | None, dest: Path, workers: int) -> list[str]:
    args = ["--source-lang", "en", "--target-lang", "zh", "--destdir", str(dest), "--workers", str(workers)]
    if backend == "none":
        args += ["--trainpref", str(corpus / "seg" / "train"), "--tokenizer", "none", "--joined-dictionary"]
    else:
        args += ["--trainpref", str(corpus / "train"), "--tokenizer", backend, "--tokenizer-model", str(model)]
        if backend == "sentencepiece":
            args.append("--joined-dictionary")
    return args


def output_checksums(dest: Path) -> dict[str, str]:
    """The manifest's checksum of every store and dictionary file (not the report or the log)."""
    files = json.loads((dest / "manifest.json").read_text(encoding="utf-8"))["files"]
    return {name: json.dumps(info, sort_keys=True) for name, info in files.items()
            if name.endswith((".bin", ".idx", ".txt"))}


def baseline_run(backend: str, corpus: Path, model: Path | None, work: Path, workers: int, src: str) -> dict:
    """``prepare`` of the baseline tree on the same input: seconds, CPU, peak RSS, stages, checksums."""
    dest = work / f"{backend}-baseline"
    shutil.rmtree(dest, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": src}
    measured = run_measured(tokenmill_cmd(*prepare_args(backend, corpus, model, dest, workers)), env=env)
    manifest = json.loads((dest / "manifest.json").read_text(encoding="utf-8"))
    row = {"prepare_s": measured.seconds, "prepare_cpu_s": measured.cpu_s, "prepare_rss_mb": measured.process_peak_mb,
           "stages": stage_groups(manifest["run"]["stages"]), "checksums": output_checksums(dest)}
    shutil.rmtree(dest, ignore_errors=True)
    return row


def no_report_run(backend: str, corpus: Path, model: Path | None, work: Path, workers: int) -> tuple[float, float]:
    """(wall s, CPU s) of the same ``prepare`` with ``--no-report`` (no report.html: what fairseq-preprocess
    and the floor do not make either)."""
    dest = work / f"{backend}-no-report"
    shutil.rmtree(dest, ignore_errors=True)
    measured = run_measured(tokenmill_cmd(*prepare_args(backend, corpus, model, dest, workers), "--no-report"))
    shutil.rmtree(dest, ignore_errors=True)
    return measured.seconds, measured.cpu_s


def one_run(backend: str, corpus: Path, model: Path | None, work: Path, workers: int,
            no_report: bool = True) -> dict:
    dest = work / backend
    shutil.rmtree(dest, ignore_errors=True)
    args = prepare_args(backend, corpus, model, dest, workers)
    measured = run_measured(tokenmill_cmd(*args))
    manifest = json.loads((dest / "manifest.json").read_text(encoding="utf-8"))
    floor_model = dest / "dict.en.txt" if backend == "none" else model
    cleaned = [str(dest / ".work" / "clean" / f"train.{lang}") for lang in ("en", "zh")]
    done = subprocess.run([sys.executable, "-c", FLOOR, backend, str(floor_model), str(workers), str(CHUNK), *cleaned],
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"floor failed for {backend}:\n{done.stderr[-3000:]}")
    floor = json.loads(done.stdout.strip().splitlines()[-1])
    tokens, items = store_tokens(dest)
    fastest = min(floor["seconds"], key=floor["seconds"].get)
    row = {
        "backend": backend,
        "prepare_s": measured.seconds,
        "prepare_rss_mb": measured.process_peak_mb,
        "prepare_tree_rss_mb": measured.tree_peak_mb,
        "prepare_cpu_s": measured.cpu_s,
        "floor_s": floor["seconds"][fastest],
        "floor_call": fastest,
        "floor_cpu_s": floor["cpu"][fastest],
        "calls_s": floor["seconds"],
        "lines": floor["lines"],
        "pairs_kept": items // 2,
        "tokens": tokens - items,
        "tokens_match": all(n == tokens - items for n in floor["tokens"].values()),
        "stages": stage_groups(manifest["run"]["stages"]),
        "checksums": output_checksums(dest),
    }
    shutil.rmtree(dest, ignore_errors=True)
    row["prepare_no_report_s"] = row["prepare_no_report_cpu_s"] = None
    if no_report:
        bare = no_report_run(backend, corpus, model, work, workers)
        row["prepare_no_report_s"], row["prepare_no_report_cpu_s"] = bare
    return row


def median_row(rows: list[dict]) -> dict:
    out = dict(rows[-1])
    for key in ("prepare_s", "prepare_no_report_s", "floor_s", "prepare_rss_mb", "prepare_tree_rss_mb", "prepare_cpu_s",
                "prepare_no_report_cpu_s", "floor_cpu_s"):
        values = [r[key] for r in rows if r.get(key) is not None]
        out[key] = statistics.median(values) if values else None
    out["calls_s"] = {c: statistics.median(r["calls_s"][c] for r in rows) for c in rows[0]["calls_s"]}
    out["floor_call"] = min(out["calls_s"], key=out["calls_s"].get)
    out["ratio"] = statistics.median(r["prepare_s"] / r["floor_s"] for r in rows)
    bare = [r["prepare_no_report_s"] / r["floor_s"] for r in rows if r.get("prepare_no_report_s") is not None]
    out["ratio_no_report"] = statistics.median(bare) if bare else None
    cpu_rows = [r for r in rows if r.get("prepare_cpu_s") and r.get("floor_cpu_s")]
    out["cpu_ratio"] = statistics.median(r["prepare_cpu_s"] / r["floor_cpu_s"] for r in cpu_rows) if cpu_rows else None
    groups = {g for r in rows for g in r["stages"]}
    out["stages"] = {g: statistics.median(r["stages"].get(g, 0.0) for r in rows) for g in sorted(groups)}
    out["other"] = statistics.median(r["prepare_s"] - sum(r["stages"].values()) for r in rows)
    out["tokens_match"] = all(r["tokens_match"] for r in rows)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=300_000)
    parser.add_argument("--vocab", type=int, default=32_000, help="SentencePiece and byte-level BPE vocabulary")
    parser.add_argument("--t2t-vocab", type=int, default=32_768, help="T2T --approx-vocab-size")
    parser.add_argument("--reps", type=int, default=None, help="rounds (default 3, 1 with --quick)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--quick", action="store_true", help="20k pairs, 4k vocabularies, one round")
    parser.add_argument("--json", help="write every run's figures here")
    parser.add_argument("--skip-no-report", action="store_true", help="do not time the --no-report command "
                        "(a shorter run at large sizes)")
    parser.add_argument("--baseline", help="the src folder of another checkout: its prepare is timed in every "
                        "round too, on the same input, and its outputs compared")
    args = parser.parse_args()
    if args.quick:
        args.pairs, args.vocab, args.t2t_vocab = 20_000, 4000, 4000
    args.reps = args.reps or (1 if args.quick else 3)
    backends = args.backends.split(",")
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"machine: {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}, load {os.getloadavg()}")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # every side starts from compiled modules, as installed
    import tokenmill

    for tree in (Path(tokenmill.__file__).parent, *([Path(args.baseline) / "tokenmill"] if args.baseline else [])):
        compileall.compile_dir(tree, quiet=1)  # a checkout's modules, compiled once
    corpus = parallel_corpus(args.pairs)
    found = models(corpus, args.pairs, args.vocab, args.t2t_vocab, backends)
    work = DATA / "tokenizers" / "runs" / str(os.getpid())  # two benchmarks at once must not share folders
    runs: dict[str, list[dict]] = {b: [] for b in backends}
    started = time.perf_counter()
    baselines: dict[str, list[dict]] = {b: [] for b in backends}
    for rep in range(args.reps):
        for backend in backends:
            run_args = (backend, corpus, found.get(backend), work, args.workers)
            if args.baseline and rep % 2 == 0:
                baselines[backend].append(baseline_run(*run_args, args.baseline))
            row = one_run(*run_args, no_report=not args.skip_no_report)
            if args.baseline and rep % 2 == 1:
                baselines[backend].append(baseline_run(*run_args, args.baseline))
            if args.baseline:
                row["same_outputs_as_baseline"] = row["checksums"] == baselines[backend][-1]["checksums"]
                print(json.dumps({"rep": rep, "baseline": {k: v for k, v in baselines[backend][-1].items()
                                                            if k != "checksums"}}), file=sys.stderr)
            runs[backend].append(row)
            print(json.dumps({"rep": rep, **{k: v for k, v in row.items() if k != "checksums"}}), file=sys.stderr)
    shutil.rmtree(work, ignore_errors=True)
    print(f"{args.pairs:,} pairs, --workers {args.workers}, median of {args.reps} "
          f"({time.perf_counter() - started:.0f} s in all), load after {os.getloadavg()}")
    rows = [median_row(runs[b]) for b in backends]
    print("\n| backend | pairs kept | tokens | prepare s | floor s (fastest library call) | prepare / floor "
          "| --no-report s | --no-report / floor | peak RSS (largest process) | token counts match |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---|")
    for r in rows:
        bare = ("- | -" if r["ratio_no_report"] is None
                else f"{r['prepare_no_report_s']:.2f} | {r['ratio_no_report']:.2f}x")
        print(f"| {r['backend']} | {r['pairs_kept']:,} | {r['tokens']:,} | {r['prepare_s']:.2f} | "
              f"{r['floor_s']:.2f} ({r['floor_call']}) | {r['ratio']:.2f}x | {bare} | "
              f"{r['prepare_rss_mb']:.0f} MB | {'yes' if r['tokens_match'] else 'NO'} |")
    print("\nCPU seconds (median; on shared cores the fairer figure: wall follows CPU when no core is idle):\n")
    print("| backend | prepare CPU s | --no-report CPU s | floor CPU s (its encode calls) | prepare / floor CPU |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        if r.get("cpu_ratio") is not None:
            bare_cpu = "-" if r["prepare_no_report_cpu_s"] is None else f"{r['prepare_no_report_cpu_s']:.2f}"
            print(f"| {r['backend']} | {r['prepare_cpu_s']:.2f} | {bare_cpu} | "
                  f"{r['floor_cpu_s']:.2f} | {r['cpu_ratio']:.2f}x |")
    print("\nEvery library call timed on the same cleaned lines (median seconds):\n")
    print("| backend | call | seconds | prepare / call |")
    print("|---|---|---:|---:|")
    for r in rows:
        for call, seconds in r["calls_s"].items():
            print(f"| {r['backend']} | {call} | {seconds:.2f} | {r['prepare_s'] / seconds:.2f}x |")
    groups = ["clean", "tokenizer", "encode", "pieces", "dictionary", "binarize"]
    print("\nWhere prepare's time goes (median seconds per stage group, manifest.json run.stages; other = start-up, "
          "imports, publishing, manifest):\n")
    print("| backend | " + " | ".join(groups) + " | other | encode stage / floor |")
    print("|---|" + "---:|" * (len(groups) + 2))
    for r in rows:
        cells = [f"{r['stages'][g]:.2f}" if g in r["stages"] else "-" for g in groups]
        encode = r["stages"].get("encode")
        vs = f"{encode / r['floor_s']:.2f}x" if encode else "- (no encode stage)"
        print(f"| {r['backend']} | " + " | ".join(cells) + f" | {r['other']:.2f} | {vs} |")
    if args.baseline:
        print_baseline(backends, runs, baselines, groups, args.baseline)
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": runs, "medians": rows, "baselines": baselines}, indent=1),
                                   encoding="utf-8")


def print_baseline(backends: list[str], runs: dict[str, list[dict]], baselines: dict[str, list[dict]],
                   groups: list[str], src: str) -> None:
    """This tree against the baseline, median of the rounds: whole command and every stage group."""
    def med(rows: list[dict], key: str) -> float:
        return statistics.median(r[key] for r in rows)

    def stage(rows: list[dict], group: str) -> float:
        return statistics.median(r["stages"].get(group, 0.0) for r in rows)

    def other(rows: list[dict]) -> float:
        return statistics.median(r["prepare_s"] - sum(r["stages"].values()) for r in rows)

    print(f"\nThis tree against the baseline ({src}), median seconds; other = start-up, report.html, publishing:\n")
    print("| backend | side | prepare s | CPU s | " + " | ".join(groups) + " | other | same outputs |")
    print("|---|---|" + "---:|" * (len(groups) + 3) + "---|")
    for backend in backends:
        ours, base = runs[backend], baselines[backend]
        same = all(r.get("same_outputs_as_baseline") for r in ours)
        for side, rows in (("baseline", base), ("this tree", ours)):
            cells = [f"{stage(rows, g):.2f}" if any(g in r["stages"] for r in rows) else "-" for g in groups]
            print(f"| {backend} | {side} | {med(rows, 'prepare_s'):.2f} | {med(rows, 'prepare_cpu_s'):.2f} | "
                  + " | ".join(cells) + f" | {other(rows):.2f} | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()
