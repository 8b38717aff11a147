"""LM preprocessing, JSONL -> Megatron token store, with a Hugging Face byte-level BPE: `tokenmill
prepare` with Megatron's flags against Megatron-style preprocessing, datatrove's tokenization step and
the tokenizer's own ``encode_batch`` (the floor), side by side in one run; ``ours`` runs ``--encoder reference``
(``tokenizers``), ``ours-fast`` runs ``--encoder fast`` (gigatoken, proven on its sample), against gigatoken's
``encode_batch`` alone.

Corpus (``tok_corpus.jsonl_corpus``, seeded, cached in ``benchmarks/.data/lm/``): ``--mb`` MB of JSONL
documents (``{"text": ...}``, ~85% English, ~15% Chinese, paragraphs split by newlines, median ~1.7 kB)
in ``--shards`` files. Tokenizer: byte-level BPE, ``--vocab`` ids, trained by tokenmill's hf backend
on the first 5,000 documents (the same for every corpus size; not timed).

Timed, each a fresh process (wall seconds of the whole command, start-up and imports included), in
this order (rotated every round when ``--rounds`` > 1):

* ``tokenmill prepare --input 'DIR/*.jsonl' --output-prefix OUT/corpus --json-keys text
  --tokenizer-type HuggingFaceTokenizer --tokenizer-model tokenizer.json --append-eod --workers 2``
* Megatron-style (``lm_megatron_style.py`` in megatron-core's venv): ``preprocess_data``'s structure --
  a 2-process ``multiprocessing.Pool`` running ``tokenizers``' ``encode`` per document (+ EOD) via
  ``imap(..., 32)``, megatron-core's ``IndexedDatasetBuilder.add_document`` + ``finalize``.
* datatrove (``datatrove_tokenize.py`` in its venv): ``JsonlReader`` -> ``DocumentTokenizer`` (EOD by the
  post-processor, no shuffling), one task per shard, 2 workers.
* the fast encoder alone: gigatoken's ``encode_batch`` (flat ids + offsets, all cores) on the same documents'
  text, 10,000 documents a call (JSON parsed beforehand, not timed).
* the floor: ``tokenizers``' ``encode_batch`` and ``encode_batch_fast`` (no offsets) on the same
  documents' text, 10,000 documents a call, rayon on all cores; only the encode calls are timed (the
  JSON is parsed beforehand), ids taken out of the encodings as lists.

Every side runs with compiled modules (``PYTHONDONTWRITEBYTECODE`` is dropped and tokenmill's modules are
compiled first, as an installed package is), so no side pays for compiling its sources on each start.

Peak memory: the summed RSS of each command's process tree (sampled every 0.2 s; forked workers'
shared pages counted in each) and the largest single process (``/usr/bin/time``). Ids: ours and
Megatron-style are compared byte for byte (``.bin`` and ``.idx``); datatrove's ``.ds`` files
(uint16 tokens, uint64 document ends) are concatenated in task order and compared token for token
and document end for document end with ours.

    python benchmarks/bench_lm_prepare.py               # 400 MB, one round (~11-13 min on 2 shared cores)
    python benchmarks/bench_lm_prepare.py --mb 1000     # the issue's 1 GB (~27-38 min here)
    python benchmarks/bench_lm_prepare.py --quick       # 20 MB smoke run

Peers: ``.peers/megatron`` (``bash scripts/setup_peers.sh megatron``; when ``tokenizers`` is missing
there it is installed with that venv's pip into ``benchmarks/.data/megatron-site`` and put on its
``PYTHONPATH``) and ``.peers/datatrove`` (``python3 -m venv .peers/datatrove && .peers/datatrove/bin/pip
install datatrove tokenizers orjson``), or ``TOKENMILL_MEGATRON_PYTHON`` / ``TOKENMILL_DATATROVE_PYTHON``.
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import itertools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _peer import how_to_get, peer_python  # noqa: E402
from _procstat import run_measured  # noqa: E402
from tok_corpus import DATA, jsonl_corpus  # noqa: E402

EOD = "<|endoftext|>"
FLOOR = r"""
import itertools, json, sys, time
import tokenizers
tok = tokenizers.Tokenizer.from_file(sys.argv[1])
calls = {"encode_batch": tok.encode_batch, "encode_batch_fast": tok.encode_batch_fast}
seconds = dict.fromkeys(calls, 0.0)
cpu = dict.fromkeys(calls, 0.0)
tokens = dict.fromkeys(calls, 0)
order = list(calls)
docs = 0
BATCH = 10000
for path in sys.argv[2:]:
    with open(path, encoding="utf-8") as handle:
        while True:
            texts = [json.loads(line)["text"] for line in itertools.islice(handle, BATCH)]
            if not texts:
                break
            docs += len(texts)
            order.reverse()  # alternate which call goes first
            for name in order:
                start, start_cpu = time.perf_counter(), time.process_time()
                ids = [e.ids for e in calls[name](texts, add_special_tokens=False)]
                seconds[name] += time.perf_counter() - start
                cpu[name] += time.process_time() - start_cpu
                tokens[name] += sum(map(len, ids))
                del ids
print(json.dumps({"seconds": seconds, "cpu": cpu, "tokens": tokens, "documents": docs}))
"""


GIGA = r"""
import itertools, json, sys, time
import gigatoken, numpy
tok = gigatoken.Tokenizer.from_json(open(sys.argv[1], "rb").read())
seconds = cpu = 0.0
tokens = docs = 0
BATCH = 10000
for path in sys.argv[2:]:
    with open(path, encoding="utf-8") as handle:
        while True:
            texts = [json.loads(line)["text"] for line in itertools.islice(handle, BATCH)]
            if not texts:
                break
            docs += len(texts)
            start, start_cpu = time.perf_counter(), time.process_time()
            ids = tok.encode_batch(texts)  # one flat uint32 buffer + offsets (awkward), all cores
            seconds += time.perf_counter() - start
            cpu += time.process_time() - start_cpu
            tokens += int(len(ids.layout.content))
            del ids
print(json.dumps({"seconds": seconds, "cpu": cpu, "tokens": tokens, "documents": docs}))
"""


def tokenizer_model(first_file: Path, vocab: int) -> Path:
    """Byte-level BPE trained on the first 5,000 documents (cached; not timed)."""
    path = DATA / "lm" / f"tokenizer-bbpe-{vocab}.json"
    if not path.exists():
        from tokenmill.vocab.tokenizer import train_tokenizer

        with open(first_file, encoding="utf-8") as handle:
            docs = [json.loads(line)["text"] for line in itertools.islice(handle, 5000)]
        train_tokenizer("hf", docs, {"kind": "byte-level-bpe", "vocab_size": vocab}, path)
    return path


def megatron_env(python: str) -> dict:
    """Environment for megatron-core's interpreter with ``tokenizers`` importable."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    if subprocess.run([python, "-c", "import tokenizers"], capture_output=True).returncode == 0:
        return env
    import tokenizers

    site = DATA / "megatron-site"
    if not (site / "tokenizers").exists():
        print(f"installing tokenizers=={tokenizers.__version__} for the megatron peer into {site}", file=sys.stderr)
        subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
                        f"tokenizers=={tokenizers.__version__}"], check=True)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH", "")]))
    return env


def same_bytes(a: Path, b: Path) -> bool:
    if a.stat().st_size != b.stat().st_size:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 24), fb.read(1 << 24)
            if x != y:
                return False
            if not x:
                return True


def first_difference(a: np.ndarray, b: np.ndarray) -> int | None:
    n = min(len(a), len(b))
    for start in range(0, n, 1 << 24):
        diff = np.flatnonzero(a[start : start + (1 << 24)] != b[start : start + (1 << 24)])
        if len(diff):
            return start + int(diff[0])
    return None if len(a) == len(b) else n


def compare_megatron(ours: Path, theirs: Path) -> str:
    bin_same = same_bytes(Path(f"{ours}.bin"), Path(f"{theirs}.bin"))
    idx_same = same_bytes(Path(f"{ours}.idx"), Path(f"{theirs}.idx"))
    if bin_same and idx_same:
        return "yes: .bin and .idx byte-identical"
    a = np.memmap(f"{ours}.bin", dtype=np.uint8, mode="r")
    b = np.memmap(f"{theirs}.bin", dtype=np.uint8, mode="r")
    where = first_difference(a, b)
    return f"NO: .bin {'same' if bin_same else f'differs from byte {where}'}, .idx {'same' if idx_same else 'differs'}"


def compare_datatrove(ours: Path, out: Path, tasks: int) -> str:
    from tokenmill.store import IndexedDataset

    store = IndexedDataset(ours)
    files = [out / f"{k:05d}_unshuffled.ds" for k in range(tasks)]
    dtype = np.uint16 if store.dtype == np.uint16 else np.uint32
    ends, offset = [], 0
    for f in files:
        local = np.fromfile(f"{f}.index", dtype=np.uint64).astype(np.int64)
        ends.append(local + offset)
        offset += f.stat().st_size // np.dtype(dtype).itemsize
    doc_ends = np.concatenate(ends)
    our_ends = np.cumsum(store.sizes.astype(np.int64))
    tokens_equal = offset == store.num_tokens
    where = None
    position = 0
    ours_tokens = store.tokens
    for f in files:
        theirs = np.memmap(f, dtype=dtype, mode="r")
        diff = first_difference(np.asarray(ours_tokens[position : position + len(theirs)]), np.asarray(theirs))
        if diff is not None:
            where = position + diff
            tokens_equal = False
            break
        position += len(theirs)
    ends_equal = len(doc_ends) == len(our_ends) and bool(np.array_equal(doc_ends, our_ends))
    if tokens_equal and ends_equal:
        return f"yes: all {offset:,} tokens and {len(doc_ends):,} document ends equal"
    return f"NO: tokens {'equal' if tokens_equal else f'differ (first at {where})'}, document ends " \
           f"{'equal' if ends_equal else 'differ'}"


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 24), b""):
            h.update(block)
    return h.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=400, help="JSONL size in MB")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=32_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--sides", default="ours,ours-fast,megatron,datatrove,floor,gigatoken",
                        help="any of ours, ours-fast (--encoder fast), ours-chunk (ours with --chunk-lines CHUNK), "
                             "megatron, datatrove, floor, gigatoken (the fast encoder alone)")
    parser.add_argument("--chunk", type=int, default=4096, help="--chunk-lines of the ours-chunk side")
    parser.add_argument("--base", help="a checkout of another commit (git worktree add --detach DIR COMMIT): adds the "
                                       "side base-fast, ours-fast's command run with DIR/src's tokenmill")
    parser.add_argument("--quick", action="store_true", help="20 MB, one round")
    parser.add_argument("--keep", action="store_true", help="keep the outputs in benchmarks/.data/lm/runs")
    parser.add_argument("--json", help="write all figures here")
    args = parser.parse_args()
    if args.quick:
        args.mb, args.rounds = 20, 1
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"machine: {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}, load {os.getloadavg()}")
    files = jsonl_corpus(args.mb, args.shards)
    corpus_bytes = sum(f.stat().st_size for f in files)
    tok = tokenizer_model(files[0], args.vocab)
    sides = args.sides.split(",")
    if args.base and "base-fast" not in sides:
        sides.insert(sides.index("ours-fast") + 1 if "ours-fast" in sides else 0, "base-fast")
    megatron_python = peer_python("megatron") if "megatron" in sides else None
    datatrove_python = peer_python("datatrove") if "datatrove" in sides else None
    for name, python in (("megatron", megatron_python), ("datatrove", datatrove_python)):
        if name in sides and python is None:
            print(f"{name} peer missing ({how_to_get(name)}); skipped", file=sys.stderr)
            sides.remove(name)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # every side starts from compiled modules, as installed
    import tokenmill

    compileall.compile_dir(Path(tokenmill.__file__).parent, quiet=1)  # a checkout's modules, compiled once
    base_env = None
    if args.base:
        compileall.compile_dir(Path(args.base) / "src" / "tokenmill", quiet=1)
        base_env = dict(os.environ, PYTHONPATH=str(Path(args.base).resolve() / "src"))
    meg_env = megatron_env(megatron_python) if megatron_python else None
    work = DATA / "lm" / "runs"
    commands = {
        "ours": lambda out: [sys.executable, "-m", "tokenmill", "prepare", "-q", "--input",
                             str(files[0].parent / "part-*.jsonl"), "--output-prefix", str(out / "corpus"),
                             "--json-keys", "text", "--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model",
                             str(tok), "--append-eod", "--workers", str(args.workers), "--encoder", "reference"],
        "ours-chunk": lambda out: [*commands["ours"](out), "--chunk-lines", str(args.chunk)],
        "ours-fast": lambda out: [*commands["ours"](out)[:-2], "--encoder", "fast"],
        "base-fast": lambda out: commands["ours-fast"](out),
        "megatron": lambda out: [megatron_python, str(HERE / "lm_megatron_style.py"), "--input", *map(str, files),
                                 "--output-prefix", str(out / "corpus"), "--tokenizer-model", str(tok), "--append-eod",
                                 "--workers", str(args.workers)],
        "datatrove": lambda out: [datatrove_python, str(HERE / "datatrove_tokenize.py"),
                                  "--input-dir", str(files[0].parent), "--glob", "part-*.jsonl",
                                  "--tokenizer-model", str(tok), "--output", str(out),
                                  "--workers", str(args.workers)],
        "floor": lambda out: [sys.executable, "-c", FLOOR, str(tok), *map(str, files)],
        "gigatoken": lambda out: [sys.executable, "-c", GIGA, str(tok), *map(str, files)],
    }
    results: dict[str, list[dict]] = {s: [] for s in sides}
    checks: dict[str, str] = {}
    total_tokens = documents = 0
    started = time.perf_counter()
    for round_ in range(args.rounds):
        order = sides[round_ % len(sides):] + sides[: round_ % len(sides)]
        shutil.rmtree(work, ignore_errors=True)
        for side in order:
            out = work / side
            out.mkdir(parents=True, exist_ok=True)
            if side.startswith(("ours", "base")):
                shutil.rmtree(out)  # prepare refuses a folder holding files it did not write
            env = meg_env if side == "megatron" else base_env if side == "base-fast" else None
            load = os.getloadavg()[0]
            m = run_measured(commands[side](out), env=env)
            row = {"seconds": m.seconds, "cpu_s": m.cpu_s, "tree_rss_mb": m.tree_peak_mb,
                   "process_rss_mb": m.process_peak_mb, "load_before": load, "load_after": os.getloadavg()[0]}
            if side == "floor":
                info = json.loads(m.stdout.strip().splitlines()[-1])
                row.update(encode_s=info["seconds"], encode_cpu_s=info["cpu"], floor_tokens=info["tokens"],
                           documents=info["documents"])
            if side == "gigatoken":
                info = json.loads(m.stdout.strip().splitlines()[-1])
                row.update(encode_s=info["seconds"], encode_cpu_s=info["cpu"], giga_tokens=info["tokens"])
            if side.startswith(("ours", "base")):
                manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
                row["stages"] = {k: v["seconds"] for k, v in manifest["run"]["stages"].items()}
                check = (manifest["run"].get("encoders", {}).get("encode.train.text") or {}).get("check") or {}
                row["check_s"] = check.get("seconds", 0.0)
            results[side].append(row)
            print(json.dumps({"round": round_, "side": side, **row}), file=sys.stderr)
        ours = work / "ours" / "corpus_text_document"
        if "base-fast" in sides and "ours-fast" in sides:
            same = all(same_bytes(work / "base-fast" / f"corpus_text_document{x}",
                                  work / "ours-fast" / f"corpus_text_document{x}") for x in (".bin", ".idx"))
            checks["base-fast"] = "yes: .bin and .idx byte-identical to ours-fast" if same else "NO: differs"
        if "ours" not in sides and "ours-fast" in sides:
            from tokenmill.store import IndexedDataset

            fast = IndexedDataset(work / "ours-fast" / "corpus_text_document")
            total_tokens, documents = fast.num_tokens, len(fast)
            if "gigatoken" in sides:
                n = results["gigatoken"][-1]["giga_tokens"] + documents
                checks["gigatoken"] = "yes: same token count (+ one EOD per document)" if n == total_tokens else \
                    f"NO: {n} vs ours-fast {total_tokens}"
        if "ours" in sides:
            from tokenmill.store import IndexedDataset

            store = IndexedDataset(ours)
            total_tokens, documents = store.num_tokens, len(store)
            if "ours-fast" in sides:
                same = all(same_bytes(Path(f"{ours}{x}"), work / "ours-fast" / f"corpus_text_document{x}")
                           for x in (".bin", ".idx"))
                checks["ours-fast"] = "yes: .bin and .idx byte-identical" if same else "NO: differs"
            if "gigatoken" in sides:
                n = results["gigatoken"][-1]["giga_tokens"] + documents
                checks["gigatoken"] = "yes: same token count (+ one EOD per document)" if n == total_tokens else \
                    f"NO: {n} vs ours {total_tokens}"
            if "ours-chunk" in sides:
                same = same_bytes(Path(f"{ours}.bin"), work / "ours-chunk" / "corpus_text_document.bin")
                checks["ours-chunk"] = "yes: .bin byte-identical" if same else "NO: .bin differs"
            if "megatron" in sides:
                checks["megatron"] = compare_megatron(ours, work / "megatron" / "corpus_text_document")
            if "datatrove" in sides:
                checks["datatrove"] = compare_datatrove(ours, work / "datatrove", len(files))
            if "floor" in sides:
                floor = results["floor"][-1]
                counts = {n + documents for n in floor["floor_tokens"].values()}
                checks["floor"] = ("yes: same token counts (+ one EOD per document)" if counts == {total_tokens}
                                   else f"NO: floor {sorted(counts)} vs ours {total_tokens}")
            checks["ours sha256[:16]"] = digest(Path(f"{ours}.bin"))
        elif "floor" in sides:
            documents = results["floor"][-1]["documents"]
            total_tokens = results["floor"][-1]["floor_tokens"]["encode_batch"] + documents
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    elapsed = time.perf_counter() - started
    mb = corpus_bytes / 1e6
    print(f"\n{mb:,.0f} MB of JSONL in {len(files)} files, {documents:,} documents, {total_tokens:,} tokens "
          f"(EOD included), vocabulary {args.vocab:,}, --workers {args.workers}, {args.rounds} round(s) "
          f"({elapsed:.0f} s in all), load after {os.getloadavg()}\n")

    def med(side: str, key: str) -> float:
        return statistics.median(r[key] for r in results[side])

    floor_s, floor_cpu = {}, {}
    if "floor" in sides:
        for call in ("encode_batch", "encode_batch_fast"):
            floor_s[call] = statistics.median(r["encode_s"][call] for r in results["floor"])
            floor_cpu[call] = statistics.median(r["encode_cpu_s"][call] for r in results["floor"])
    giga_s = statistics.median(r["encode_s"] for r in results["gigatoken"]) if "gigatoken" in sides else None
    names = {"ours": "tokenmill prepare (Megatron flags, --encoder reference)",
             "ours-fast": "tokenmill prepare (Megatron flags, --encoder fast)",
             "base-fast": f"the same, tokenmill of {args.base}",
             "ours-chunk": f"tokenmill prepare --chunk-lines {args.chunk}",
             "megatron": "Megatron-style (Pool(2) + IndexedDatasetBuilder)",
             "datatrove": "datatrove JsonlReader -> DocumentTokenizer"}
    calls = ("encode_batch", "encode_batch_fast")
    print("| | wall s | tokens/s | MB/s | s per GB | x floor wall (encode_batch / _fast) | x gigatoken alone | CPU s "
          "| x floor CPU (encode_batch / _fast) | peak RSS, process tree | peak RSS, largest process "
          "| load 1-min before/after | same ids as ours |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")

    def giga(value: float) -> str:
        return f"{value / giga_s:.2f}x" if giga_s else "-"


    def ratios(value: float, base: dict) -> str:
        return " / ".join(f"{value / base[c]:.2f}x" for c in calls) if base else "-"

    for side in [s for s in ("ours", "ours-fast", "base-fast", "ours-chunk", "megatron", "datatrove") if s in sides]:
        s, cpu = med(side, "seconds"), med(side, "cpu_s")
        same = checks.get(side, "-")
        print(f"| {names[side]} | {s:.1f} | {total_tokens / s / 1e6:.2f} M | {mb / s:.2f} | {s / mb * 1000:.0f} | "
              f"{ratios(s, floor_s)} | {giga(s)} | {cpu:.1f} | {ratios(cpu, floor_cpu)} | "
              f"{med(side, 'tree_rss_mb'):,.0f} MB | "
              f"{med(side, 'process_rss_mb'):,.0f} MB | {med(side, 'load_before'):.1f} / {med(side, 'load_after'):.1f} "
              f"| {same} |")
    if giga_s:
        cpu = statistics.median(r["encode_cpu_s"] for r in results["gigatoken"])
        print(f"| gigatoken encode_batch alone (encode calls only) | {giga_s:.1f} | "
              f"{total_tokens / giga_s / 1e6:.2f} M | {mb / giga_s:.2f} | {giga_s / mb * 1000:.0f} | "
              f"{ratios(giga_s, floor_s)} | 1.00x | {cpu:.1f} | "
              f"{ratios(cpu, floor_cpu)} | {med('gigatoken', 'tree_rss_mb'):,.0f} MB (whole script) | "
              f"{med('gigatoken', 'process_rss_mb'):,.0f} MB | {med('gigatoken', 'load_before'):.1f} / "
              f"{med('gigatoken', 'load_after'):.1f} | {checks.get('gigatoken', '-')} |")
    for call, s in floor_s.items():
        print(f"| floor: tokenizers {call} (encode calls only) | {s:.1f} | {total_tokens / s / 1e6:.2f} M | "
              f"{mb / s:.2f} | {s / mb * 1000:.0f} | {ratios(s, floor_s)} | {giga(s)} | {floor_cpu[call]:.1f} | "
              f"{ratios(floor_cpu[call], floor_cpu)} | {med('floor', 'tree_rss_mb'):,.0f} MB (whole script) | "
              f"{med('floor', 'process_rss_mb'):,.0f} MB | {med('floor', 'load_before'):.1f} / "
              f"{med('floor', 'load_after'):.1f} (both calls) | {checks.get('floor', '-')} |")
    for side in [s for s in ("ours", "ours-fast", "base-fast", "ours-chunk") if s in sides]:
        stages = {k: statistics.median(r["stages"].get(k, 0.0) for r in results[side])
                  for k in results[side][0]["stages"]}
        other = med(side, "seconds") - sum(stages.values())
        print(f"\n{names[side]}, stages (s): " + ", ".join(f"{k} {v:.1f}" for k, v in stages.items())
              + f" (of which the encoder's sample check {med(side, 'check_s'):.1f})"
              + f", other (start-up, publishing, manifest, report) {other:.1f}")
    if giga_s:
        giga_cpu = statistics.median(r["encode_cpu_s"] for r in results["gigatoken"])
        for side in [s for s in ("ours-fast", "base-fast") if s in sides]:
            rounds = ", ".join(f"{r['cpu_s']:.1f}" for r in results[side])
            print(f"{names[side]}: CPU {med(side, 'cpu_s'):.1f} s (rounds {rounds}) = "
                  f"{med(side, 'cpu_s') / giga_cpu:.2f}x gigatoken's encode CPU {giga_cpu:.1f} s (rounds "
                  + ", ".join(f"{r['encode_cpu_s']:.1f}" for r in results["gigatoken"]) + f"); wall "
                  f"{med(side, 'seconds') / giga_s:.2f}x; largest process {med(side, 'process_rss_mb'):,.0f} MB")
    print(f"checks: {json.dumps(checks)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"mb": mb, "tokens": total_tokens, "documents": documents,
                                               "results": results, "checks": checks}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
