"""Tensor2Tensor's SubwordTextEncoder vs tokenmill's: vocabulary build time (same vocabulary) and
encoding throughput vs SentencePiece, side by side in one run.

Text: ``t2t_corpus.CorpusGenerator`` (seeded): mixed English and Chinese lines -- English from ~170
real function words plus a synthetic syllable lexicon, Chinese words of 1-4 characters drawn from a
frequency-ranked list of common characters plus more CJK ideographs, both with Zipf frequencies;
see that module's docstring.  The corpus file holds about 2.1x the byte budget in characters, so
T2T's ``generate_lines_for_vocab`` samples every other line until the budget is spent.

Build: T2T runs ``generate_lines_for_vocab`` + ``build_from_generator``'s counting +
``build_to_target_size`` in its own venv (timed inside that process, TensorFlow import excluded);
ours runs ``SubwordTextEncoder.build_from_files`` on the same file, budget, target and
max_subtoken_length.  The two vocabularies must be equal, order included.

Encoding: the sampled lines, encoded by our ``encode_batch`` (cold: batch cache emptied first,
i.e. every distinct token segmented; warm: cache filled) and by a SentencePiece unigram model
trained on the same lines with the same vocabulary size, ``encode(list, num_threads=1)``.

    python benchmarks/bench_t2t_subword.py            # budget 1e7 (T2T needs tens of minutes here)
    python benchmarks/bench_t2t_subword.py --quick    # budget 5e4, a smoke run of a minute or so

T2T's interpreter: --t2t-python, else TOKENMILL_T2T_PYTHON, else the .peers/t2t venv (scripts/setup_peers.sh t2t).

One full run (budget 1e7 -> 51,825 lines, 10.0 M characters; target 8192; max_subtoken_length 200;
2 shared cores under load from other work, commit 3e9ce56):
    vocab build       T2T 1114.7 s   tokenmill 23.9 s   46.6x faster, vocabularies equal (8202 entries)
    encode (cold)     SP 2.47 s      tokenmill 5.97 s   2.42x SentencePiece's time
    encode (warm)     SP 2.47 s      tokenmill 3.22 s   1.30x SentencePiece's time
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _peer import peer_python  # noqa: E402
from t2t_corpus import write_corpus  # noqa: E402

from tokenmill.vocab.t2t.sampling import sample_files  # noqa: E402
from tokenmill.vocab.t2t_subword import SubwordTextEncoder  # noqa: E402


def t2t_python(arg: str | None) -> str:
    found = arg if arg and Path(arg).exists() else peer_python("t2t")
    if found:
        return found
    sys.exit("T2T venv not found: pass --t2t-python or set TOKENMILL_T2T_PYTHON (see shared/PEERS.md)")


def run_t2t(python: str, corpus: Path, args: argparse.Namespace, workdir: Path) -> dict:
    job = {
        "corpus": [str(corpus)],
        "file_byte_budget": args.budget,
        "target_size": args.target_size,
        "max_subtoken_length": args.max_subtoken_length,
    }
    (workdir / "t2t_job.json").write_text(json.dumps([job]), encoding="utf-8")
    subprocess.run(
        [python, str(HERE / "t2t_oracle" / "t2t_oracle.py"), str(workdir / "t2t_job.json"), str(workdir / "t2t.json")],
        check=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
        stderr=subprocess.DEVNULL,
    )
    return json.loads((workdir / "t2t.json").read_text(encoding="utf-8"))[0]


def median_time(fn, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=float, default=1e7, help="file_byte_budget (T2T's, in characters)")
    parser.add_argument("--target-size", type=int, default=8192)
    parser.add_argument("--max-subtoken-length", type=int, default=200, help="T2T problems' default: 200")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each of our measurements (median)")
    parser.add_argument("--t2t-repeats", type=int, default=1, help="runs of T2T's build (median)")
    parser.add_argument("--quick", action="store_true", help="budget 5e4, target 3000: a smoke run")
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--t2t-python")
    parser.add_argument("--workdir", help="keep the corpus and T2T's output here (default: a temp dir)")
    args = parser.parse_args()
    if args.quick:
        args.budget, args.target_size, args.t2t_repeats = 5e4, 3000, 1
    python = t2t_python(args.t2t_python)

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(args.workdir or tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        corpus = workdir / f"corpus_{int(args.budget)}_{args.seed}.txt"
        if not corpus.exists():
            write_corpus(str(corpus), int(2.1 * args.budget), seed=args.seed)
        lines = list(sample_files([corpus], args.budget))
        sampled = sum(map(len, lines))
        print(
            f"corpus {corpus.stat().st_size / 1e6:.1f} MB; budget {args.budget:.0e} chars -> {len(lines)} lines, "
            f"{sampled / 1e6:.2f} M chars sampled; target {args.target_size}, max_subtoken_length "
            f"{args.max_subtoken_length}",
            flush=True,
        )

        def ours_build() -> SubwordTextEncoder:
            return SubwordTextEncoder.build_from_files(
                [corpus],
                args.target_size,
                file_byte_budget=args.budget,
                max_subtoken_length=args.max_subtoken_length,
            )

        ours_s, enc = median_time(ours_build, args.repeats)
        print(f"ours: build {ours_s:.2f} s (median of {args.repeats}), vocab {enc.vocab_size}", flush=True)

        t2t_runs = [run_t2t(python, corpus, args, workdir) for _ in range(args.t2t_repeats)]
        t2t_s = statistics.median(r["count_seconds"] + r["build_seconds"] for r in t2t_runs)
        t2t_count_s = statistics.median(r["count_seconds"] for r in t2t_runs)
        same = all(r["vocab"] == list(enc.all_subtoken_strings) for r in t2t_runs)
        print(
            f"t2t: build {t2t_s:.2f} s (median of {args.t2t_repeats}; reading+counting {t2t_count_s:.2f} s), "
            f"vocab {t2t_runs[0]['vocab_size']}; vocabularies equal (order included): {same}",
            flush=True,
        )

        import sentencepiece as spm

        # SentencePiece refuses a vocabulary smaller than the characters it must cover.
        sp_vocab = max(args.target_size, int(1.1 * len(set().union(*lines))) + 100)
        model = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(lines),
            model_writer=model,
            vocab_size=sp_vocab,
            character_coverage=0.9995,
            num_threads=1,
            minloglevel=2,
        )
        sp = spm.SentencePieceProcessor(model_proto=model.getvalue())

        def ours_cold():
            enc.clear_cache()
            return enc.encode_batch(lines)

        cold_s, (flat, _) = median_time(ours_cold, args.repeats)
        warm_s, _ = median_time(lambda: enc.encode_batch(lines), args.repeats)
        sp_s, sp_out = median_time(lambda: sp.encode(lines, num_threads=1), args.repeats)
        sp_tokens = sum(map(len, sp_out))
        mchars = sampled / 1e6

        rows = [
            ("vocab build: sample+count+bisect", f"{t2t_s:.2f} s", f"{ours_s:.2f} s", f"{t2t_s / ours_s:.1f}x faster"),
            ("encode, cold cache", f"SP {sp_s:.2f} s", f"{cold_s:.2f} s", f"{cold_s / sp_s:.2f}x SP's time"),
            ("encode, warm cache", f"SP {sp_s:.2f} s", f"{warm_s:.2f} s", f"{warm_s / sp_s:.2f}x SP's time"),
            ("encode throughput (cold)", f"SP {mchars / sp_s:.2f} M chars/s", f"{mchars / cold_s:.2f} M chars/s", ""),
            ("ids produced", f"SP {sp_tokens}", f"{flat.size}", ""),
        ]
        print()
        print(f"{'measure':32} {'peer':>26} {'tokenmill':>20}  ratio")
        for name, peer, ours_v, ratio in rows:
            print(f"{name:32} {peer:>26} {ours_v:>20}  {ratio}")
        print(f"\nSentencePiece unigram vocabulary: {sp_vocab}")
        print(f"vocabularies equal: {same}; medians of {args.repeats} (ours, SP) and {args.t2t_repeats} (T2T) runs")
        return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
