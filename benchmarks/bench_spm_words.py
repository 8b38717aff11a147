"""SentencePiece unigram encoding by distinct words, against the library's own encode of whole lines.

The idea (issue 30, item 4): a unigram model trained with ``split_by_whitespace`` has no piece with ``▁``
after its first character, so no piece crosses a word boundary, and a corpus has far fewer distinct words
than words. Encode each distinct space-separated word once (``encode(words, num_threads=2)``), then build
every line's ids by a numpy gather. This script measures what that would save and whether the ids equal the
library's, line for line.

Given cleaned lines (one file per side, e.g. ``DESTDIR/.work/clean/train.en`` of a ``prepare`` run) and the
``.model``, per side and in chunks of 65,536 lines:

* the floor: ``encode(chunk, num_threads=2)`` and its lists flattened to numpy (what prepare needs);
* the word method: ``str.split(" ")`` of the chunk, a dict numbering the distinct words, the new ones encoded
  in one call (2 threads), the lines' ids gathered with numpy; timed as a whole;
* the lines whose ids differ, counted (and the first few printed).

Both are timed in wall and CPU seconds of this process (all its threads): on shared cores the CPU seconds are
the fairer figure (the floor runs two threads, the word method mostly one).

``--near-ties N`` then shows why the method is not exact by construction: SentencePiece's Viterbi
(``EncodeOptimized``) adds piece scores in float32 along the whole line and keeps a candidate only when it
scores strictly higher, so the score already reached before a word is rounded into every comparison inside
it: two segmentations of a word with equal scores (the same pieces in another order) are decided by what came
before. Of the first ``N`` distinct words, those whose two best segmentations (``nbest_encode``) score within
1e-3 are put after each of the first 200 lines, and the script counts the lines after which the word's ids
are not its ids alone.

    python benchmarks/bench_spm_words.py --model M.model --lines DEST/.work/clean/train.en DEST/.work/clean/train.zh
"""

from __future__ import annotations

import argparse
import os
import time
from itertools import chain

import numpy as np
import sentencepiece

CHUNK = 65_536


def floor_ids(sp: sentencepiece.SentencePieceProcessor, lines: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(wall s, CPU s) in the encode call, then flat ids and lengths of ``lines`` (the library's batch encode)."""
    start, cpu = time.perf_counter(), time.process_time()
    encoded = sp.encode(lines, num_threads=2)
    spent = np.array([time.perf_counter() - start, time.process_time() - cpu])
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    return spent, np.fromiter(chain.from_iterable(encoded), dtype=np.int32, count=int(lengths.sum())), lengths


class WordTable:
    """Distinct words and their ids: ``number`` maps a word to its row; rows' ids are ``flat[starts:ends]``."""

    def __init__(self) -> None:
        self.number: dict[str, int] = {}
        self.parts: list[np.ndarray] = []
        self.sizes: list[np.ndarray] = []
        self.flat = np.empty(0, dtype=np.int32)
        self.lengths = np.empty(0, dtype=np.int64)

    def encode(self, sp: sentencepiece.SentencePieceProcessor, lines: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(flat ids, lengths) of ``lines``: new words encoded once, every word's ids gathered."""
        rows = [line.split(" ") for line in lines]
        per_line = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        words = list(chain.from_iterable(rows))
        number, new = self.number, []
        for word in words:
            if word not in number:
                number[word] = len(number)
                new.append(word)
        if new:
            encoded = sp.encode(new, num_threads=2)
            sizes = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
            ids = np.fromiter(chain.from_iterable(encoded), dtype=np.int32, count=int(sizes.sum()))
            self.flat = np.concatenate([self.flat, ids])
            self.lengths = np.concatenate([self.lengths, sizes])
        index = np.fromiter(map(number.__getitem__, words), dtype=np.int64, count=len(words))
        ends = np.cumsum(self.lengths)
        starts = ends - self.lengths
        sizes = self.lengths[index]
        offsets = np.repeat(starts[index] - (np.cumsum(sizes) - sizes), sizes)
        flat = self.flat[np.arange(int(sizes.sum()), dtype=np.int64) + offsets]
        line_of_word = np.repeat(np.arange(len(lines)), per_line)
        lengths = np.bincount(line_of_word, weights=sizes, minlength=len(lines)).astype(np.int64)
        return flat, lengths


def compare(path: str, sp: sentencepiece.SentencePieceProcessor) -> None:
    """Both methods over one side's lines, chunk by chunk: seconds, distinct words, lines that differ."""
    lines = open(path, encoding="utf-8").read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    table, differ, shown, total_words = WordTable(), 0, 0, 0
    floor_s, flatten_s, words_s = np.zeros(2), np.zeros(2), np.zeros(2)  # (wall, CPU) seconds each
    for i in range(0, len(lines), CHUNK):
        chunk = lines[i:i + CHUNK]
        start = np.array([time.perf_counter(), time.process_time()])
        call_s, ref_flat, ref_lengths = floor_ids(sp, chunk)
        floor_s += call_s
        flatten_s += np.array([time.perf_counter(), time.process_time()]) - start - call_s
        total_words += sum(line.count(" ") + 1 for line in chunk)
        start = np.array([time.perf_counter(), time.process_time()])
        flat, lengths = table.encode(sp, chunk)
        words_s += np.array([time.perf_counter(), time.process_time()]) - start
        if np.array_equal(flat, ref_flat) and np.array_equal(lengths, ref_lengths):
            continue
        ref_ends, ends = np.cumsum(ref_lengths), np.cumsum(lengths)
        for j, line in enumerate(chunk):
            a = ref_flat[ref_ends[j] - ref_lengths[j]:ref_ends[j]]
            b = flat[ends[j] - lengths[j]:ends[j]]
            if not np.array_equal(a, b):
                differ += 1
                if shown < 3:
                    shown += 1
                    print(f"  differs: line {i + j + 1}: {line[:80]!r}")
    floor, words = floor_s + flatten_s, words_s
    print(f"| {os.path.basename(path)} | {len(lines):,} | {total_words:,} | {len(table.number):,} | "
          f"{floor[0]:.2f} / {floor[1]:.2f} | {words[0]:.2f} / {words[1]:.2f} | {words[0] / floor[0]:.2f}x / "
          f"{words[1] / floor[1]:.2f}x | {differ:,} |")


def near_tie(sp: sentencepiece.SentencePieceProcessor, path: str, limit: int) -> None:
    """Words of the first ``limit`` distinct words whose two best segmentations (``nbest_encode``) score within
    1e-3 of each other, each put after the file's first 200 lines: whether the library's ids for the word then
    differ from its ids alone (the word method's assumption)."""
    scores = np.array([sp.get_score(i) for i in range(sp.get_piece_size())], dtype=np.float64)
    seen: dict[str, None] = {}
    heads: list[str] = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if len(heads) < 200:
                heads.append(line.rstrip("\n"))
            for word in line.split():
                seen.setdefault(word, None)
            if len(seen) >= limit:
                break
    ties = []
    for word in seen:
        nbest = sp.nbest_encode(word, nbest_size=2)
        if len(nbest) == 2 and nbest[0] != nbest[1]:
            margin = float(scores[nbest[0]].sum() - scores[nbest[1]].sum())
            if margin < 1e-3:
                ties.append((margin, word))
    ties.sort()
    print(f"\n{len(seen):,} distinct words: {len(ties)} with two best segmentations within 1e-3 "
          f"({sum(m == 0 for m, _ in ties)} exact ties: the same pieces in another order)")
    for margin, word in ties:
        alone = sp.encode(word)
        flips = [line for line in heads if sp.encode(f"{line} {word}")[-len(alone):] != alone]
        print(f"  {word!r} alone {alone} (margin {margin:.2g}): other ids after {len(flips)} of {len(heads)} lines"
              + (f", e.g. after {flips[0][:50]!r}: {sp.encode(f'{flips[0]} {word}')[-len(alone):]}" if flips else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--lines", nargs="+", required=True, help="files of cleaned lines, one per side")
    parser.add_argument("--near-ties", type=int, default=0, help="distinct words searched for a near tie")
    args = parser.parse_args()
    sp = sentencepiece.SentencePieceProcessor(model_file=args.model)
    print(f"load {os.getloadavg()}\n")
    print("| side | lines | words | distinct words | floor wall / CPU s (encode + lists to numpy) | word method "
          "wall / CPU s | word / floor, wall / CPU | lines that differ |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for path in args.lines:
        compare(path, sp)
    if args.near_ties:
        near_tie(sp, args.lines[0], args.near_ties)
    print(f"\nload after {os.getloadavg()}")


if __name__ == "__main__":
    main()
