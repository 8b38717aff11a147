"""Text stage throughput: read + normalize + filter + dedup on generated en-zh pairs.

Compared in one run, on the same files:

* ``python for-line``: ``for line in open(...)`` over both files, zipped (reading only; note that it
  splits lines on U+2028, U+0085... so it is a speed floor, not a correct reader);
* ``seed-style clean``: what the cleaning scripts of today do per line (the seed's full-width loop,
  strip, length filters, a Python set of pairs for dedup);
* ``tokenmill read``: ParallelFiles.chunks() only;
* ``tokenmill clean``: read + Normalizer(fullwidth, control, whitespace) + filters (empty, max tokens,
  char ratio, identical, non-letters) + dedup, through :class:`tokenmill.text.Cleaner` (the same
  rules as the seed-style row, so both keep the same pairs);
* ``tokenmill clean (defaults)``: read + CleanConfig() (control removal, whitespace, empty, dedup).

Prints the median of ``--repeats`` runs and ratios. Usage: ``python benchmarks/bench_text.py --pairs 1000000``.
Also times vectorized language ID against py3langid's own loop on ``--langid-lines`` lines.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from tokenmill.text import CleanConfig, Cleaner, FilterConfig, Normalizer, ParallelFiles, ReadOptions
from tokenmill.text.charclass import class_table


def generate(directory: Path, pairs: int, seed: int = 0) -> tuple[Path, Path]:
    """Zipf-distributed pseudo-English words and common-CJK pseudo-Chinese, with noise."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("etaoinshrdlcumwfgypbvkjxqz"))
    vocab = ["".join(rng.choice(letters, size=int(rng.integers(1, 10)))) for _ in range(20000)]
    vocab_arr = np.array(vocab, dtype=object)
    hanzi = np.array([chr(c) for c in range(0x4E00, 0x4E00 + 3000)], dtype=object)
    en_len = np.clip(rng.poisson(12, size=pairs), 1, None)
    zh_len = np.clip((en_len * rng.uniform(1.2, 2.0, size=pairs)).astype(int), 1, None)
    en_words = vocab_arr[np.minimum(rng.zipf(1.3, size=int(en_len.sum())) - 1, len(vocab) - 1)]
    zh_chars = hanzi[np.minimum(rng.zipf(1.2, size=int(zh_len.sum())) - 1, len(hanzi) - 1)]
    en_cut, zh_cut = np.cumsum(en_len)[:-1], np.cumsum(zh_len)[:-1]
    en = [" ".join(w) for w in np.split(en_words, en_cut)]
    zh = ["".join(c) + "。" for c in np.split(zh_chars, zh_cut)]
    noise = rng.random(pairs)
    for i in np.flatnonzero(noise < 0.05):  # 5% duplicates of an earlier pair
        j = int(rng.integers(0, max(i, 1)))
        en[i], zh[i] = en[j], zh[j]
    for i in np.flatnonzero((noise >= 0.05) & (noise < 0.06)):  # full-width noise and extra spaces
        en[i] = "Ｔｈｅ  " + en[i] + " ，１２３ "
        zh[i] = zh[i].replace("。", "，\u3000好。")
    for i in np.flatnonzero((noise >= 0.06) & (noise < 0.065)):
        zh[i] = ""
    for i in np.flatnonzero((noise >= 0.065) & (noise < 0.07)):
        zh[i] = en[i]
    src, tgt = directory / "train.en", directory / "train.zh"
    src.write_text("\n".join(en) + "\n", encoding="utf-8")
    tgt.write_text("\n".join(zh) + "\n", encoding="utf-8")
    return src, tgt


def python_for_line(src: Path, tgt: Path) -> int:
    n = 0
    with open(src, encoding="utf-8") as a, open(tgt, encoding="utf-8") as b:
        for _s, _t in zip(a, b, strict=False):
            n += 1
    return n


def _q2b(text: str) -> str:
    out = []
    for ch in text:
        code = ord(ch)
        if code == 12288:
            code = 32
        elif 65281 <= code <= 65374:
            code -= 65248
        out.append(chr(code))
    return "".join(out)


def seed_style_clean(src: Path, tgt: Path) -> int:
    seen: set[tuple[str, str]] = set()
    kept = 0
    with open(src, encoding="utf-8") as a, open(tgt, encoding="utf-8") as b:
        for s, t in zip(a, b, strict=False):
            s, t = " ".join(_q2b(s).split()), " ".join(_q2b(t).split())
            if not s or not t or s == t:
                continue
            if len(s.split()) > 250 or len(t.split()) > 250:
                continue
            letters_s, letters_t = sum(c.isalpha() for c in s), sum(c.isalpha() for c in t)
            if letters_s < 0.2 * len(s.replace(" ", "")) or letters_t < 0.2 * len(t.replace(" ", "")):
                continue
            if max(len(s), len(t)) > 9 * max(min(len(s), len(t)), 1):
                continue
            if (s, t) in seen:
                continue
            seen.add((s, t))
            kept += 1
    return kept


def tokenmill_read(src: Path, tgt: Path) -> int:
    return sum(len(c) for c in ParallelFiles([(src, tgt)]).chunks())


CONFIG = CleanConfig(
    Normalizer(fullwidth=True),
    FilterConfig(max_tokens=250, max_ratio=9, ratio_unit="chars", drop_identical=True, max_nonletter=0.8),
)


def tokenmill_clean_defaults(src: Path, tgt: Path) -> int:
    cleaner = Cleaner(CleanConfig())  # control removal + whitespace collapse, empty sides, dedup
    return sum(len(cleaner(c)) for c in ParallelFiles([(src, tgt)], ReadOptions()).chunks())


def tokenmill_clean(src: Path, tgt: Path) -> int:
    class_table()  # per-process table (~0.5 s once), built outside the timed loop by the warm-up run
    cleaner = Cleaner(CONFIG)
    return sum(len(cleaner(c)) for c in ParallelFiles([(src, tgt)], ReadOptions()).chunks())


def timed(fn, *args, repeats: int) -> tuple[float, int]:
    times, result = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def bench_langid(lines: int) -> None:
    try:
        import py3langid
    except ImportError:
        print("langid: py3langid not installed, skipped")
        return
    from tokenmill.text.langid import LanguageIdentifier

    rng = np.random.default_rng(1)
    base = [
        "The committee will publish its final report next spring.",
        "Der Ausschuss wird seinen Abschlussbericht im nächsten Frühjahr veröffentlichen.",
        "委员会将于明年春天发布最终报告。",
        "Комитет опубликует свой окончательный доклад следующей весной.",
    ]
    sample = [f"{base[i % 4]} {int(rng.integers(1e6))}" for i in range(lines)]
    ident = LanguageIdentifier()
    ident.classify(sample[:10])  # model load outside the timing
    py3langid.classify("warm up")
    t0 = time.perf_counter()
    ours = ident.classify(sample)
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    theirs = [py3langid.classify(x)[0] for x in sample]
    t_py = time.perf_counter() - t0
    same = float(np.mean(ours == np.array(theirs, dtype=object)))
    print(
        f"\nlangid on {lines:,} lines: tokenmill {t_ours:.2f}s ({lines / t_ours:,.0f} lines/s), "
        f"py3langid loop {t_py:.2f}s ({lines / t_py:,.0f} lines/s), speed-up {t_py / t_ours:.1f}x, "
        f"same labels {same:.2%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed-repeats", type=int, default=1, help="runs of the slow per-line baseline")
    parser.add_argument("--langid-lines", type=int, default=20_000)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        t0 = time.perf_counter()
        src, tgt = generate(Path(tmp), args.pairs)
        size = (src.stat().st_size + tgt.stat().st_size) / 1e6
        print(
            f"generated {args.pairs:,} pairs ({size:.0f} MB) in {time.perf_counter() - t0:.1f}s; "
            f"median of {args.repeats} runs ({args.seed_repeats} for seed-style), one process"
        )
        rows = [
            ("python for-line (read only)", python_for_line),
            ("tokenmill read", tokenmill_read),
            ("seed-style clean (per line)", seed_style_clean),
            ("tokenmill clean", tokenmill_clean),
            ("tokenmill clean (defaults)", tokenmill_clean_defaults),
        ]
        results = {}
        for name, fn in rows:
            repeats = args.seed_repeats if fn is seed_style_clean else args.repeats
            sec, n = timed(fn, src, tgt, repeats=repeats)
            results[name] = sec
            print(f"{name:<30} {sec:7.2f}s  {args.pairs / sec:>12,.0f} pairs/s  {size / sec:7.1f} MB/s  -> {n:,} pairs")
        base, seed = results["python for-line (read only)"], results["seed-style clean (per line)"]
        print(f"\ntokenmill read  / python for-line: {results['tokenmill read'] / base:.2f}x the time")
        print(f"tokenmill clean / python for-line: {results['tokenmill clean'] / base:.2f}x the time")
        print(f"seed-style clean / tokenmill clean: {seed / results['tokenmill clean']:.2f}x (speed-up)")
    if args.langid_lines:
        bench_langid(args.langid_lines)


if __name__ == "__main__":
    main()
