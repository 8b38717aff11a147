"""Parquet input: the read step alone (read + decompress + decode + column extraction into Python strings) in
MB/s per core, and ``tokenmill prepare`` on Parquet against the same documents as JSONL, side by side in one run.

Corpus: ``tok_corpus.jsonl_corpus`` (seeded, cached in ``benchmarks/.data/lm/``): ``--mb`` MB of JSONL documents
(``{"text": ...}``, ~85% English, ~15% Chinese, paragraphs split by newlines, median ~1.7 kB) in ``--shards``
files, and the same documents written by pyarrow as Parquet (one file per shard, row groups of ~128 MB of text
(``--group-mb``), zstd), cached next to them.

Timed, each a fresh process (``_procstat.run_measured``: wall and CPU seconds, peak RSS of the largest process):

* read, one process, one thread (pyarrow's own threads off): ``ParquetSource.chunks()`` over every file (the
  ``text`` column as Python strings, checked for nulls and type), against ``JsonlSource.chunks()`` over the
  JSONL and pyarrow's floor (``read_row_group(...).column("text").to_pylist()`` with nothing checked). MB/s
  are of the documents' UTF-8 text, per CPU second (= per core).
* datatrove (``--datatrove``; its venv, ``bash scripts/setup_peers.sh datatrove``): ``ParquetReader ->
  DocumentTokenizer`` on the same Parquet files and tokenizer, documents unshuffled, with 1 and 2 tasks (2 workers):
  wall and CPU seconds, peak RSS, and whether its token stream equals ours and changes with its task count.
* prepare: ``tokenmill prepare --input FILES --output-prefix ... --json-keys text --tokenizer-type
  HuggingFaceTokenizer --tokenizer-model tokenizer.json --append-eod --workers 2`` on the Parquet files and on
  the JSONL files, order alternated each round; the two ``.bin``/``.idx`` are compared byte for byte.

    python benchmarks/bench_parquet.py               # 60 MB, one round (a few minutes on 2 shared cores)
    python benchmarks/bench_parquet.py --mb 2000 --rounds 3
    python benchmarks/bench_parquet.py --quick       # 10 MB smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _datatrove_out import load_stream  # noqa: E402
from _peer import how_to_get, peer_python  # noqa: E402
from _procstat import run_measured  # noqa: E402
from bench_lm_prepare import same_bytes, tokenizer_model  # noqa: E402
from tok_corpus import DATA, jsonl_corpus  # noqa: E402

from tokenmill.store import IndexedDataset  # noqa: E402

READ = r"""
import json, sys, time
from tokenmill.text import ReadOptions, open_source
fmt, files = sys.argv[1], sys.argv[2:]
if fmt != "jsonl":
    import pyarrow.parquet  # imports are not the read step
    import tokenmill.text.sources.parquet
started, cpu = time.perf_counter(), time.process_time()
if fmt == "floor":
    import pyarrow.parquet as pq
    n = size = 0
    cpu_hashing = 0.0
    for path in files:
        pf = pq.ParquetFile(path)
        for g in range(pf.metadata.num_row_groups):
            texts = pf.read_row_group(g, columns=["text"], use_threads=False).column("text").to_pylist()
            n += len(texts)
            t = time.process_time()
            size += sum(len(s.encode("utf-8")) for s in texts)
            cpu_hashing += time.process_time() - t
else:
    source = open_source(files, fmt, src_key="text", tgt_key=None, options=ReadOptions(chunk_lines=8192))
    n = size = 0
    cpu_hashing = 0.0
    for chunk in source.chunks():
        n += len(chunk.src)
        t = time.process_time()
        size += sum(len(s.encode("utf-8")) for s in chunk.src)  # the measuring, not the reading: taken out below
        cpu_hashing += time.process_time() - t
print(json.dumps({"docs": n, "text_bytes": size, "seconds": time.perf_counter() - started,
                  "cpu": time.process_time() - cpu - cpu_hashing}))
"""


def parquet_corpus(files: list[Path], group_mb: float) -> list[Path]:
    """The JSONL shards as Parquet (zstd, row groups of about ``group_mb`` MB of text), cached."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = files[0].parent / f"parquet-{group_mb:g}mb-groups"
    made = [out / (f.stem + ".parquet") for f in files]
    if all(p.exists() for p in made):
        return made
    out.mkdir(parents=True, exist_ok=True)
    for source, target in zip(files, made, strict=True):
        with open(source, encoding="utf-8") as handle:
            texts = [json.loads(line)["text"] for line in handle]
        mean = sum(len(t.encode("utf-8")) for t in texts) / max(len(texts), 1)
        rows = max(1, int(group_mb * 1e6 / mean))
        tmp = target.with_suffix(".tmp")
        pq.write_table(pa.table({"text": texts}), tmp, row_group_size=rows, compression="zstd")
        os.replace(tmp, target)
    return made


def read_side(fmt: str, files: list[Path]) -> dict:
    env = dict(os.environ, PYTHONPATH=str(HERE.parent / "src"))
    m = run_measured([sys.executable, "-c", READ, fmt, *map(str, files)], env=env)
    info = json.loads(m.stdout.strip().splitlines()[-1])
    mb = info["text_bytes"] / 1e6
    return {"docs": info["docs"], "text_mb": round(mb, 1), "wall_s": round(info["seconds"], 2),
            "cpu_s": round(info["cpu"], 2), "mb_per_cpu_s": round(mb / info["cpu"], 1),
            "peak_rss_mb": round(m.process_peak_mb or 0, 1)}


def prepare_side(pattern: str, out: Path, tok: Path, workers: int) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "tokenmill", "prepare", "-q", "--no-report", "--input", pattern,
           "--output-prefix", str(out / "corpus"), "--json-keys", "text", "--tokenizer-type", "HuggingFaceTokenizer",
           "--tokenizer-model", str(tok), "--append-eod", "--workers", str(workers)]
    env = dict(os.environ, PYTHONPATH=str(HERE.parent / "src"))
    m = run_measured(cmd, env=env)
    return {"seconds": round(m.seconds, 2), "cpu_s": round(m.cpu_s or 0, 2), "tree_rss_mb": round(m.tree_peak_mb, 1),
            "process_rss_mb": round(m.process_peak_mb or 0, 1)}


def datatrove_side(files: list[Path], tok: Path, ours: Path, work: Path) -> dict:
    """datatrove's ParquetReader -> DocumentTokenizer with 1 and 2 tasks: time, RSS and its token stream compared
    with ours (``ours``: the Parquet run's store) and with itself across task counts."""
    python = peer_python("datatrove")
    if python is None:
        print(f"datatrove peer missing ({how_to_get('datatrove')}); skipped")
        return {}
    store = IndexedDataset(ours)
    ours_tokens, ours_ends = np.asarray(store.tokens), np.cumsum(store.sizes.astype(np.int64))
    dtype = np.dtype(np.uint16) if store.dtype == np.uint16 else np.dtype(np.uint32)
    rows, streams = {}, {}
    for tasks in (1, 2):
        out = work / f"datatrove-{tasks}"
        shutil.rmtree(out, ignore_errors=True)
        cmd = [python, str(HERE / "datatrove_tokenize.py"), "--reader", "parquet", "--input-dir", str(files[0].parent),
               "--glob", "*.parquet", "--tokenizer-model", str(tok), "--output", str(out), "--tasks", str(tasks),
               "--workers", "2"]
        m = run_measured(cmd, env=dict(os.environ, PYTHONWARNINGS="ignore"))
        tokens, ends = streams[tasks] = load_stream(sorted(out.glob("*.ds")), dtype)
        rows[f"x{tasks}"] = row = {
            "seconds": round(m.seconds, 2), "cpu_s": round(m.cpu_s or 0, 2), "tree_rss_mb": round(m.tree_peak_mb, 1),
            "process_rss_mb": round(m.process_peak_mb or 0, 1),
            "same_stream_as_ours": bool(np.array_equal(tokens, ours_tokens) and np.array_equal(ends, ours_ends)),
            "tokens": len(tokens)}
        print(f"datatrove x{tasks}  {row['seconds']:7.1f} s (cpu {row['cpu_s']} s, largest process "
              f"{row['process_rss_mb']} MB), {row['tokens']:,} tokens, same as ours: {row['same_stream_as_ours']}")
        shutil.rmtree(out)
    rows["x2"]["same_stream_as_x1"] = bool(np.array_equal(streams[1][0], streams[2][0])
                                           and np.array_equal(streams[1][1], streams[2][1]))
    print(f"datatrove: same stream with 2 tasks as with 1: {rows['x2']['same_stream_as_x1']}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=60, help="corpus size in MB of JSONL")
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--group-mb", type=float, default=128, help="Parquet row group size in MB of text")
    parser.add_argument("--vocab", type=int, default=32_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--no-prepare", action="store_true", help="the read step only")
    parser.add_argument("--sides", default="parquet,jsonl",
                        help="prepare on these inputs (``parquet``: its peak RSS alone at large sizes)")
    parser.add_argument("--no-read", action="store_true", help="prepare only (not the read step)")
    parser.add_argument("--datatrove", action="store_true", help="also datatrove's ParquetReader -> DocumentTokenizer")
    parser.add_argument("--quick", action="store_true", help="10 MB, one round")
    parser.add_argument("--json", help="write all figures here")
    args = parser.parse_args()
    if args.quick:
        args.mb, args.rounds = 10, 1
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"machine: {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}, load {os.getloadavg()}")
    jsonl = jsonl_corpus(args.mb, args.shards)
    parquet = parquet_corpus(jsonl, args.group_mb)
    sizes = {"jsonl_mb": sum(f.stat().st_size for f in jsonl) / 1e6,
             "parquet_mb": sum(f.stat().st_size for f in parquet) / 1e6}
    print(f"corpus: {sizes['jsonl_mb']:.0f} MB JSONL in {len(jsonl)} files = {sizes['parquet_mb']:.0f} MB Parquet "
          "(zstd)")
    sides = args.sides.split(",")
    results: dict = {"sizes": sizes, "read": {}, "prepare": {side: [] for side in sides}}
    for side, files in () if args.no_read else (("parquet", parquet), ("jsonl", jsonl), ("floor", parquet)):
        results["read"][side] = row = read_side(side, files)
        print(f"read {side:8s} {row['mb_per_cpu_s']:7.1f} MB/s per core ({row['text_mb']} MB of text, "
              f"{row['docs']:,} docs, cpu {row['cpu_s']} s, wall {row['wall_s']} s, peak RSS {row['peak_rss_mb']} MB)")
    if not args.no_prepare:
        tok = tokenizer_model(jsonl[0], args.vocab)
        work = DATA / "lm" / "runs-parquet"
        for round_ in range(args.rounds):
            order = sides if round_ % 2 == 0 else sides[::-1]
            for side in order:
                started = time.perf_counter()
                files = parquet if side == "parquet" else jsonl
                row = prepare_side(str(files[0].parent / f"*{files[0].suffix}"), work / side, tok, args.workers)
                results["prepare"][side].append(row)
                print(f"prepare {side:8s} {row['seconds']:7.1f} s (cpu {row['cpu_s']} s, largest process "
                      f"{row['process_rss_mb']} MB) [{time.perf_counter() - started:.0f} s]")
            if len(sides) < 2:
                continue
            same = all(same_bytes(work / "parquet" / f"corpus_text_document{ext}",
                                  work / "jsonl" / f"corpus_text_document{ext}") for ext in (".bin", ".idx"))
            results.setdefault("same_ids", []).append(same)
            print(f"round {round_ + 1}: same .bin/.idx from Parquet and JSONL: {same}")
        med = {side: statistics.median(r["seconds"] for r in rows) for side, rows in results["prepare"].items()}
        cpu = {side: statistics.median(r["cpu_s"] for r in rows) for side, rows in results["prepare"].items()}
        for side in sides:
            print(f"prepare {side}, median wall {med[side]:.1f} s, CPU {cpu[side]:.1f} s")
        if len(sides) == 2:
            print(f"prepare Parquet / JSONL, medians: wall {med['parquet'] / med['jsonl']:.2f}, "
                  f"CPU {cpu['parquet'] / cpu['jsonl']:.2f}")
        if args.datatrove:
            results["datatrove"] = datatrove_side(parquet, tok, work / "parquet" / "corpus_text_document", work)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
