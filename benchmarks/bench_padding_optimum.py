"""How far the default batching (lowpad) is from the least padding its sample order allows.

For each corpus and token budget (``required_batch_size_multiple`` 8, as ``bench_batching.py``) it prints
the padding fraction (pad slots / all slots, both sides; a batch occupies rows x (longest source +
longest target) slots) of:

* **lowpad**: tokenmill's default mode through its public API (``Planner`` with ``BatchConfig`` defaults
  but ``max_tokens`` and the multiple), world size 1 (no batch is split to even ranks). Its cut is the exact
  least ``slots + price x batches`` of its order with ``price = round(batch_penalty x max_tokens)``; the run
  checks that against the DP below (an independent implementation) at the same price;
* **fairseq**: fairseq's ``batch_by_size`` on its ``ordered_indices`` (``TranslationTask`` +
  ``get_batch_iterator`` in fairseq's own venv, ``bench_batching``'s ``fairseq-start`` child on a store
  with the same lengths);
* **lowpad, batch_penalty 0**: the same order cut greedily, the fewest batches that order allows;
* **optimum at its batch count**: the least padding of any cut of lowpad's own sample order (its Hilbert
  "curve order" of (source, target) length) into contiguous batches under the same rules, with no more
  batches than the greedy cut made (the greedy cut makes the fewest possible, below): "the least padding
  at the same number of steps";
* **DP cut with at most 1% more batches / at most lowpad's / at most fairseq's batches**: of the cuts the
  DP finds for a grid of per-batch penalties (factors of sqrt 2), the one with the least padding among
  those with at most that many batches: achievable cuts of the same order, not bounds;
* **optimum, any batch count**: the same without the count limit. It buys its padding with more, smaller
  batches (its batch count is printed), i.e. fewer tokens per step: a floor, not a fair target;
* **other orders, other penalties**: lowpad's cut of other sample orders, and lowpad with other
  ``batch_penalty`` values (``--penalties``);
* **order-free lower bound**: a bound on the padding of *any* grouping of the corpus (any order) into no
  more batches than the greedy cut made (below). It is sound but weak.

The rules (those of ``tokenmill.batching.pack.pack_greedy`` and ``costs.row_costs``, ``pad_to_multiple``
1, no ``max_sentences``): a row costs its longer side; a batch of ``r`` rows whose costliest row costs
``c`` needs ``r * c <= max_tokens``; ``r`` is a multiple of ``m`` (the required multiple), except a batch
of fewer than ``m`` rows that cannot take the next row ((r + 1) x max cost > max_tokens, fairseq's
rounding) or that ends the order. The optimum code requires ``m`` rows of the costliest sample to fit
(``m x max cost <= max_tokens``; every corpus here is filtered to sides of at most 250 tokens + </s>), so
a short batch can only be the last one and every other batch boundary falls on a multiple of ``m``.

**The DP.** Positions are taken in groups of ``m`` consecutive samples; ``q[b]`` is the best value of the
first ``b`` groups and ``q[b] = min_k q[b - k] + m k (maxS + maxT over groups b-k .. b-1) + lam`` over
the ``k`` whose window fits the budget (at most ``max_tokens // (m x cost of group b-1)`` of them; the
window maxima come from one running maximum per boundary). ``lam`` is a penalty per batch: 0 gives the
unconstrained optimum; ``lam`` above any possible total of slots (``2 x max_tokens x (groups + 1)``)
minimises the batch count first and the slots second, exactly (integer arithmetic). The Python loop
runs over group boundaries, not samples, and skips many of them (20-75% on the corpora here): inside a
stretch of ``L`` groups whose samples all have the same (source, target) length (fit ``F`` groups per
batch), every boundary past the first ``2F - 1`` has ``q[b] = q[b - F] + m F (s + t) + lam`` (proof
below), filled in by one vectorized assignment. All penalties are solved in the same pass (a column
each).

*Proof of the skip.* For ``b`` in ``[A + F, E]`` (stretch of groups ``A .. E-1``) every feasible window
contains group ``b - 1`` and so has at most ``F`` groups, all inside the stretch: with
``P[b] = q[b] - m w b`` (``w = s + t``), ``P[b] = lam + min(P[b-F .. b-1])``. For ``b - 1 >= A + F`` too,
the window of ``b`` is that of ``b - 1`` less ``P[b-1-F]`` plus ``P[b - 1] = lam + min(window of b-1) >=
min(window of b-1)``, so ``P`` is non-decreasing on ``[A + F, E]``; for ``b >= A + 2F`` the window lies in
that range and its minimum is ``P[b - F]``.

*Why lowpad's count is the least.* With every boundary on the group grid and feasibility closed under
taking sub-windows, taking the longest feasible window from the left (what ``pack_greedy`` does, its
rounding down to a multiple of ``m`` included) makes the fewest batches (the usual exchange argument);
the self-test checks it against the brute force.

**The order-free bound.** For any grouping into at most ``M`` batches with ``n % m == 0`` (no short batch),
slots = sum r maxS + sum r maxT. Take the source side alone, with the weaker budget ``r x maxS <=
max_tokens``: among groupings with given batch sizes, giving the largest batch maxima the longest
sources (sizes kept) never raises a batch's maximum, so the best grouping is a contiguous cut of the
sources sorted by length, found by the same DP; the target side likewise. For the count limit, weak
duality: for any ``lam >= 0`` and any grouping with at most ``M`` batches, its slots are at least
``D(lam) - lam M``, ``D(lam)`` the penalised optimum; the bound is the best over a grid of ``lam``.
Both sides' bounds add up. It ignores that a row's two lengths travel together, which is where the
padding of a length-sorted order comes from, so expect it far below the curve-order optimum.

Corpora (all lengths count </s> on each side, as fairseq's sizes do; pairs with a side over 250
tokens are dropped and the count is cut to a multiple of 8, at random, seeded):

* ``gettext-many``: **real** text: every English msgid and its translation in the gettext catalogs
  installed under ``/usr/share/locale`` (Debian's packages' own translations, 185 languages), exact
  duplicates removed, a random 1M of them; lengths from a joint 32k SentencePiece unigram model trained
  here on 300k of the pairs. Software messages: short (median 5 / 9 tokens), not news or web text.
* ``gettext-en-ru``: **real**, the English-Russian pairs of the same catalogs (~49k).
* ``en-zh-synthetic``: **synthetic**, ``tok_corpus.parallel_corpus`` (300k generated pairs, real-looking
  words and punctuation), word-segmented token counts (``seg/``), cleaned and deduplicated.
* ``lognormal-synthetic``: **synthetic** lengths, ``bench_batching``'s generator (1M pairs).

Usage::

    python benchmarks/bench_padding_optimum.py               # all corpora, budgets 4096 and 16384
    python benchmarks/bench_padding_optimum.py --selftest    # the DP against brute force on random inputs
    python benchmarks/bench_padding_optimum.py --corpora gettext-en-ru --budgets 4096

Corpora, the tokenizer and the fairseq stores are kept in ``--workdir`` for reuse.
"""

from __future__ import annotations

import argparse
import glob
import json
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_batching import MULTIPLE, SEED, fairseq_python, make_corpus, run_child, write_store
from bench_batching import lengths as lognormal_lengths

BUDGETS = (4096, 16384)
MAX_LENGTH = 250  # tokens per side before </s>
CORPORA = ("gettext-many", "gettext-en-ru", "en-zh-synthetic", "lognormal-synthetic")
SYNTHETIC = {"en-zh-synthetic", "lognormal-synthetic"}
SLACK = 1.01  # the "at most 1% more batches" column


# ------------------------------------------------------------------------------------------- the DP
@dataclass
class Cuts:
    """Optimal cuts of one order, one per penalty."""

    penalties: np.ndarray
    value: np.ndarray
    """Penalised optimum per penalty: slots + penalty x batches (int64)."""
    slots: np.ndarray
    """Slots of the optimal cut per penalty."""
    batches: np.ndarray
    """Batch count of the optimal cut per penalty."""
    pred: np.ndarray
    """(groups + 1, penalties) predecessor boundary (in groups) of each boundary on the optimal path."""
    n: int
    multiple: int
    looped: int
    """Group boundaries the Python loop visited (the others came from the stretch shortcut)."""

    def ends(self, which: int) -> np.ndarray:
        """Batch ends (samples) of the cut of penalty ``which`` (walks the path: one step per batch)."""
        m, n = self.multiple, self.n
        groups = n // m
        out = [n] if n % m else []
        b = groups
        while b > 0:
            out.append(b * m)
            b = int(self.pred[b, which])
        return np.asarray(out[::-1], dtype=np.int64)


def min_count_penalty(n: int, max_tokens: int, multiple: int) -> int:
    """A penalty per batch above any cut's total slots (a batch holds at most 2 x max_tokens slots)."""
    return 2 * max_tokens * (n // multiple + 1) + 1


def optimal_cuts(src: np.ndarray, tgt: np.ndarray, max_tokens: int, multiple: int, penalties) -> Cuts:
    """Least ``slots + penalty x batches`` over contiguous cuts of this order, for each penalty (module doc)."""
    s = np.asarray(src, dtype=np.int64)
    t = np.asarray(tgt, dtype=np.int64)
    lam = np.asarray(penalties, dtype=np.int64)
    m, budget, n = multiple, max_tokens, len(s)
    if n and int(np.maximum(s, t).max()) * m > budget:
        raise ValueError("the optimum needs `multiple` rows of the longest sample to fit max_tokens")
    groups = n // m
    gs, gt = s[: groups * m].reshape(groups, m), t[: groups * m].reshape(groups, m)
    g_src, g_tgt = gs.max(axis=1), gt.max(axis=1)
    fit = budget // (m * np.maximum(g_src, g_tgt))  # most groups in a window holding this group
    # stretches of groups whose samples all share one (source, target) length
    pure = (gs.min(axis=1) == g_src) & (gt.min(axis=1) == g_tgt)
    same_as_next = pure[:-1] & pure[1:] & (g_src[:-1] == g_src[1:]) & (g_tgt[:-1] == g_tgt[1:])
    starts = np.flatnonzero(pure & ~np.concatenate([[False], same_as_next]))
    stops = np.flatnonzero(pure & ~np.concatenate([same_as_next, [False]])) + 1
    f = fit[starts] if groups else np.zeros(0, dtype=np.int64)
    long = stops >= starts + 2 * f
    skip = np.zeros(groups + 2, dtype=np.int64)
    np.add.at(skip, (starts + 2 * f)[long], 1)
    np.add.at(skip, stops[long] + 1, -1)
    work = np.flatnonzero(np.cumsum(skip)[1 : groups + 1] == 0) + 1
    fills = {
        int(a + 2 * k - 1): (int(a), int(k), int(e), int(g_src[a] + g_tgt[a]))
        for a, k, e in zip(starts[long], f[long], stops[long], strict=True)
    }

    width = len(lam)
    cols = np.arange(width)
    q = np.zeros((groups + 1, width), dtype=np.int64)
    count = np.zeros((groups + 1, width), dtype=np.int64)
    pred = np.zeros((groups + 1, width), dtype=np.int32)
    rows = m * np.arange(1, int(fit.max(initial=1)) + 1, dtype=np.int64)
    for b in work.tolist():
        k0 = min(b, int(fit[b - 1]))
        ms = np.maximum.accumulate(g_src[b - k0 : b][::-1])
        mt = np.maximum.accumulate(g_tgt[b - k0 : b][::-1])
        k = int(np.searchsorted(rows[:k0] * np.maximum(ms, mt), budget, side="right"))
        value = q[b - k : b][::-1] + (rows[:k] * (ms[:k] + mt[:k]))[:, None]
        j = value.argmin(axis=0)
        q[b] = value[j, cols] + lam
        p = b - 1 - j
        pred[b] = p
        count[b] = count[p, cols] + 1
        if b in fills:
            a, k, e, w = fills[b]
            target = np.arange(a + 2 * k, e + 1)
            offset = target - (a + 2 * k)
            source = a + k + offset % k
            times = (offset // k + 1)[:, None]
            q[target] = q[source] + times * (m * k * w + lam)[None, :]
            count[target] = count[source] + times
            pred[target] = (target - k)[:, None]
    value, batches = q[groups].copy(), count[groups].copy()
    if n % m:
        value += (n % m) * int(s[groups * m :].max() + t[groups * m :].max()) + lam
        batches += 1
    return Cuts(lam, value, value - lam * batches, batches, pred, n, m, len(work))


def check_cut(src: np.ndarray, tgt: np.ndarray, ends: np.ndarray, max_tokens: int, multiple: int) -> tuple[int, int]:
    """(slots, batches) of a cut given by its batch ends; raises if a batch breaks the budget or multiple rule."""
    s, t = np.asarray(src, dtype=np.int64), np.asarray(tgt, dtype=np.int64)
    n = len(s)
    ends = np.asarray(ends, dtype=np.int64)
    starts = np.concatenate([[0], ends[:-1]])
    assert len(ends) and ends[-1] == n and np.all(ends > starts), "batches must tile the order"
    rows = ends - starts
    ms, mt = np.maximum.reduceat(s, starts), np.maximum.reduceat(t, starts)
    peak = np.maximum(ms, mt)
    assert np.all(rows * peak <= max_tokens), "a batch is over max_tokens"
    nxt = np.maximum(s, t)[np.minimum(ends, n - 1)]
    cannot_grow = (ends == n) | ((rows + 1) * np.maximum(peak, nxt) > max_tokens)
    assert np.all((rows % multiple == 0) | ((rows < multiple) & cannot_grow)), "a batch breaks the multiple rule"
    return int((rows * (ms + mt)).sum()), len(ends)


def side_lower_bound(lengths: np.ndarray, max_tokens: int, multiple: int, batches: int) -> int | None:
    """Least slots of one side over any grouping into at most ``batches`` batches (module doc); None if
    ``len % multiple`` (a short batch could then sit anywhere)."""
    if len(lengths) % multiple:
        return None
    ordered = np.sort(np.asarray(lengths, dtype=np.int64))
    lam = np.concatenate([[0], 2 ** np.arange(0, int(2 * max_tokens).bit_length() + 1)])
    cuts = optimal_cuts(ordered, np.zeros_like(ordered), max_tokens, multiple, lam)
    return int((cuts.value - lam * batches).max())


# ------------------------------------------------------------------------------------------- self-test
def brute_force(src, tgt, max_tokens: int, multiple: int, penalties) -> tuple[list[int], tuple[int, int]]:
    """Item-by-item O(n^2) DP with the general rule: (least slots + penalty x batches for each penalty,
    least (batches, slots))."""
    n = len(src)
    cost = [max(a, b) for a, b in zip(src, tgt, strict=True)]
    best: list[list[int | None]] = [[0] + [None] * n for _ in penalties]
    lexi: list[tuple[int, int] | None] = [(0, 0)] + [None] * n
    for j in range(1, n + 1):
        ms = mt = 0
        for i in range(j - 1, -1, -1):
            ms, mt = max(ms, src[i]), max(mt, tgt[i])
            r, peak = j - i, max(ms, mt)
            if r * peak > max_tokens:
                break
            short_ok = r < multiple and (j == n or (r + 1) * max(peak, cost[j]) > max_tokens)
            if r % multiple and not short_ok:
                continue
            slots = r * (ms + mt)
            for table, lam in zip(best, penalties, strict=True):
                if table[i] is not None and (table[j] is None or table[i] + slots + lam < table[j]):
                    table[j] = table[i] + slots + lam
            if lexi[i] is not None:
                cand = (lexi[i][0] + 1, lexi[i][1] + slots)
                if lexi[j] is None or cand < lexi[j]:
                    lexi[j] = cand
    return [table[n] for table in best], lexi[n]


def brute_order_free(src, tgt, max_tokens: int, multiple: int, max_batches: int) -> int | None:
    """Least slots over every set partition into at most ``max_batches`` batches (tiny n, n % multiple == 0)."""
    n = len(src)
    best = None

    def walk(i: int, blocks: list[list[int]]) -> None:
        nonlocal best
        if len(blocks) > max_batches:
            return
        if i == n:
            total = 0
            for block in blocks:
                ms, mt = max(src[x] for x in block), max(tgt[x] for x in block)
                if len(block) % multiple or len(block) * max(ms, mt) > max_tokens:
                    return
                total += len(block) * (ms + mt)
            best = total if best is None else min(best, total)
            return
        for block in blocks:
            block.append(i)
            walk(i + 1, blocks)
            block.pop()
        blocks.append([i])
        walk(i + 1, blocks)
        blocks.pop()

    walk(0, [])
    return best


def _random_order(rng: np.random.Generator, n: int, m: int) -> tuple[np.ndarray, np.ndarray, int]:
    """A few (source, target) cells in runs (sometimes shuffled), and a budget that fits m rows of each."""
    cells = rng.integers(1, 9, size=(int(rng.integers(1, 6)), 2))
    runs = rng.integers(1, 40, size=n)
    pick = np.repeat(rng.integers(0, len(cells), size=n), runs)[:n]
    if rng.random() < 0.3:
        pick = pick[rng.permutation(n)]
    src, tgt = cells[pick, 0], cells[pick, 1]
    budget = int(m * np.maximum(src, tgt).max() * rng.integers(1, 7) + rng.integers(0, m * 3))
    return src, tgt, budget


def selftest(seed: int = 0) -> None:
    """The vectorized DP against the brute force on random orders (runs of equal lengths, random budgets,
    multiples and penalties); lowpad's greedy cut against the least count; the order-free bound against
    exhaustive grouping on tiny inputs."""
    from tokenmill.batching.pack import pack_greedy

    rng = np.random.default_rng(seed)
    checked = shortcut = bounds = 0
    for case in range(700):
        m = int(rng.choice([1, 2, 4, 8]))
        n = int(rng.integers(1, 90)) if case < 600 else int(rng.integers(200, 400))
        src, tgt, budget = _random_order(rng, n, m)
        penalties = [0, int(rng.integers(1, 4 * budget)), min_count_penalty(n, budget, m)]
        cuts = optimal_cuts(src, tgt, budget, m, penalties)
        values, (few, few_slots) = brute_force(src.tolist(), tgt.tolist(), budget, m, penalties)
        assert cuts.value.tolist() == values, (case, cuts.value, values)
        assert (cuts.batches[2], cuts.slots[2]) == (few, few_slots), (case, cuts.batches[2], few)
        for which in range(3):  # the reconstructed cuts obey the rules and cost what the DP says
            assert check_cut(src, tgt, cuts.ends(which), budget, m) == (cuts.slots[which], cuts.batches[which])
        greedy = pack_greedy(np.maximum(src, tgt), budget, None, m)
        g_slots, g_batches = check_cut(src, tgt, greedy, budget, m)
        assert g_batches == few and g_slots >= few_slots, (case, g_batches, few)
        shortcut += int(cuts.looped < n // m)
        checked += 1
    while bounds < 200:
        m = int(rng.choice([1, 2]))
        n = m * int(rng.integers(1, 9 // m))
        src, tgt, budget = _random_order(rng, n, m)
        few = int(optimal_cuts(src, tgt, budget, m, [min_count_penalty(n, budget, m)]).batches[0])
        for limit in {few, few + 1}:
            exact = brute_order_free(src.tolist(), tgt.tolist(), budget, m, limit)
            bound = side_lower_bound(src, budget, m, limit) + side_lower_bound(tgt, budget, m, limit)
            assert bound <= exact, (bound, exact)
        bounds += 1
    print(f"selftest: {checked} random orders (n 1-399, multiples 1/2/4/8; penalties 0, random, count-first): "
          f"DP == brute force ({shortcut} of them through the same-length stretch shortcut), cuts re-checked, "
          f"greedy's batch count == the least; order-free bound <= exhaustive optimum on {bounds} tiny inputs: OK")


# ------------------------------------------------------------------------------------------- corpora
def _filtered(src: np.ndarray, tgt: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Drop pairs with a side over MAX_LENGTH or empty, add </s>, cut the count to a multiple of 8 at random."""
    keep = (src >= 1) & (tgt >= 1) & (src <= MAX_LENGTH) & (tgt <= MAX_LENGTH)
    src, tgt = src[keep].astype(np.int32) + 1, tgt[keep].astype(np.int32) + 1
    extra = len(src) % MULTIPLE
    if extra:
        drop = np.random.default_rng(seed).choice(len(src), extra, replace=False)
        mask = np.ones(len(src), dtype=bool)
        mask[drop] = False
        src, tgt = src[mask], tgt[mask]
    return src, tgt


def gettext_pairs() -> list[tuple[str, str, str]]:
    """(language, English, translation) from every installed gettext catalog, whitespace collapsed,
    exact duplicates removed (plural forms: the first; message contexts stripped)."""
    import gettext

    space = re.compile(r"\s+")
    seen: set[tuple[str, str, str]] = set()
    pairs = []
    for path in sorted(glob.glob("/usr/share/locale/*/LC_MESSAGES/*.mo")):
        lang = Path(path).parts[-3]
        try:
            with open(path, "rb") as handle:
                catalog = gettext.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
        except Exception:  # a catalog in an odd charset: skip it
            continue
        for key, text in catalog.items():
            if isinstance(key, tuple):
                if key[1] != 0:
                    continue
                key = key[0]
            source = space.sub(" ", key.split("\x04", 1)[-1]).strip()
            target = space.sub(" ", text).strip()
            item = (lang, source, target)
            if source and target and item not in seen:
                seen.add(item)
                pairs.append(item)
    return pairs


def gettext_corpora(workdir: Path, sample: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Token lengths of the gettext corpora (cached in ``workdir``); {} when no catalog is installed."""
    cache = workdir / f"gettext-lengths-{sample}.npz"
    if cache.exists():
        data = np.load(cache)
        return {"gettext-many": (data["many_src"], data["many_tgt"]), "gettext-en-ru": (data["ru_src"], data["ru_tgt"])}
    import sentencepiece as spm

    began = time.perf_counter()
    pairs = gettext_pairs()
    if len(pairs) < 10_000:
        return {}
    print(f"# gettext: {len(pairs):,} unique pairs in {time.perf_counter() - began:.0f} s", file=sys.stderr)
    rng = np.random.default_rng(SEED)
    model = workdir / "gettext-spm.model"
    if not model.exists():
        text = workdir / "gettext-spm-train.txt"
        with open(text, "w", encoding="utf-8") as handle:
            for i in rng.choice(len(pairs), min(300_000, len(pairs)), replace=False).tolist():
                handle.write(pairs[i][1] + "\n" + pairs[i][2] + "\n")
        spm.SentencePieceTrainer.train(
            input=str(text), model_prefix=str(workdir / "gettext-spm"), vocab_size=32000, character_coverage=0.9995,
            num_threads=2, input_sentence_size=600_000, shuffle_input_sentence=True, minloglevel=2,
        )
    sp = spm.SentencePieceProcessor(model_file=str(model))
    many = sorted(rng.choice(len(pairs), min(sample, len(pairs)), replace=False).tolist())
    russian = [i for i, p in enumerate(pairs) if p[0] == "ru"]

    def count(ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
        src = sp.encode([pairs[i][1] for i in ids], num_threads=2)
        tgt = sp.encode([pairs[i][2] for i in ids], num_threads=2)
        return np.array([len(x) for x in src]), np.array([len(x) for x in tgt])

    many_src, many_tgt = _filtered(*count(many), SEED)
    ru_src, ru_tgt = _filtered(*count(russian), SEED)
    np.savez(cache, many_src=many_src, many_tgt=many_tgt, ru_src=ru_src, ru_tgt=ru_tgt)
    print(f"# gettext corpora ready in {time.perf_counter() - began:.0f} s", file=sys.stderr)
    return {"gettext-many": (many_src, many_tgt), "gettext-en-ru": (ru_src, ru_tgt)}


def en_zh_corpus(workdir: Path, pairs: int = 300_000) -> tuple[np.ndarray, np.ndarray]:
    """Word counts of ``tok_corpus.parallel_corpus`` (cleaned like prepare: spaces collapsed, empty sides
    and exact duplicate pairs dropped)."""
    cache = workdir / f"en-zh-lengths-{pairs}.npz"
    if cache.exists():
        data = np.load(cache)
        return data["src"], data["tgt"]
    from tok_corpus import parallel_corpus

    folder = parallel_corpus(pairs)
    raw_src = (folder / "seg" / "train.en").read_text(encoding="utf-8").split("\n")[:pairs]
    raw_tgt = (folder / "seg" / "train.zh").read_text(encoding="utf-8").split("\n")[:pairs]
    seen: set[tuple[str, str]] = set()
    src, tgt = [], []
    for a, b in zip(raw_src, raw_tgt, strict=True):
        a, b = " ".join(a.split()), " ".join(b.split())
        if a and b and (a, b) not in seen:
            seen.add((a, b))
            src.append(a.count(" ") + 1)
            tgt.append(b.count(" ") + 1)
    out = _filtered(np.array(src), np.array(tgt), SEED)
    np.savez(cache, src=out[0], tgt=out[1])
    return out


def load_corpora(names: list[str], workdir: Path, sample: int) -> dict[str, tuple[np.ndarray, np.ndarray, Path]]:
    """name -> (source lengths, target lengths, fairseq data dir); lengths with </s>."""
    out = {}
    if any(name.startswith("gettext") for name in names):
        found = gettext_corpora(workdir, sample)
        if not found:
            print("# no gettext catalogs under /usr/share/locale: the real-text corpora are skipped", file=sys.stderr)
        for name, (src, tgt) in found.items():
            if name in names:
                out[name] = (src, tgt, write_store(workdir / f"store-{name}-{len(src)}", src, tgt))
    if "en-zh-synthetic" in names:
        src, tgt = en_zh_corpus(workdir)
        out["en-zh-synthetic"] = (src, tgt, write_store(workdir / f"store-en-zh-{len(src)}", src, tgt))
    if "lognormal-synthetic" in names:
        n = 1_000_000
        src, tgt = lognormal_lengths(n, SEED)  # make_corpus writes these lengths + </s>
        out["lognormal-synthetic"] = (src + 1, tgt + 1, make_corpus(workdir, n))
    return out


# ------------------------------------------------------------------------------------------- measure
def padding_of(slots: int, real: int) -> float:
    return 1.0 - real / slots if slots else 0.0


def measure(name: str, src: np.ndarray, tgt: np.ndarray, data: Path, budget: int, fairseq: str | None,
            repeats: int, knob: list[float]) -> dict:
    from tokenmill.batching import BatchConfig, Sizes, pack_greedy
    from tokenmill.batching.plan import Planner

    real = int(src.sum()) + int(tgt.sum())
    config = BatchConfig(max_tokens=budget, required_batch_size_multiple=MULTIPLE)
    began = time.perf_counter()
    plan = Planner(Sizes(src=src, tgt=tgt), config, data_fingerprint=f"padding-optimum-{name}", cache=False).plan(1)
    plan_s = time.perf_counter() - began
    order = np.asarray(plan.order)
    by_start = np.argsort(plan.table.starts)
    ends = np.asarray(plan.table.stops)[by_start]
    assert np.array_equal(np.asarray(plan.table.starts)[by_start], np.concatenate([[0], ends[:-1]]))
    s_order, t_order = src[order], tgt[order]
    lowpad_slots, lowpad_batches = check_cut(s_order, t_order, ends, budget, MULTIPLE)  # also: lowpad obeys the rules
    assert abs(padding_of(lowpad_slots, real) - plan.stats.padding_fraction) < 1e-12
    # The same order cut greedily (batch_penalty 0): the fewest batches that order allows.
    greedy_ends = pack_greedy(np.maximum(s_order, t_order), budget, None, MULTIPLE)
    greedy_slots, greedy_batches = check_cut(s_order, t_order, greedy_ends, budget, MULTIPLE)

    grid = [round(2 ** (k / 2)) for k in range(12, 2 * (4 * budget).bit_length() + 1)]
    price = max(1, round(config.batch_penalty * budget))  # pack_lowpad's price per batch
    penalties = [0, *grid, price, min_count_penalty(len(src), budget, MULTIPLE)]
    seconds = []
    for _ in range(repeats):
        began = time.perf_counter()
        cuts = optimal_cuts(s_order, t_order, budget, MULTIPLE, penalties)
        seconds.append(time.perf_counter() - began)
    assert cuts.batches[-1] == greedy_batches, "the greedy cut should make the fewest batches"
    at_price = len(penalties) - 2
    assert lowpad_slots + price * lowpad_batches == cuts.value[at_price], "lowpad's cut should be the DP's optimum"
    assert cuts.slots[-1] <= greedy_slots
    roomy = np.flatnonzero(cuts.batches <= SLACK * greedy_batches)
    slack = int(roomy[np.argmin(cuts.slots[roomy])])
    at_lowpad = np.flatnonzero(cuts.batches <= lowpad_batches)
    best_at_lowpad = int(at_lowpad[np.argmin(cuts.slots[at_lowpad])])
    for which in sorted({0, slack, best_at_lowpad, len(penalties) - 1}):
        assert check_cut(s_order, t_order, cuts.ends(which), budget, MULTIPLE) == (
            int(cuts.slots[which]), int(cuts.batches[which]))
    began = time.perf_counter()
    sides = [side_lower_bound(side, budget, MULTIPLE, greedy_batches) for side in (src, tgt)]
    bound_s = time.perf_counter() - began
    bound = None if None in sides else padding_of(sum(sides), real)

    row = {
        "corpus": name,
        "synthetic": name in SYNTHETIC,
        "pairs": len(src),
        "max_tokens": budget,
        "lowpad": padding_of(lowpad_slots, real),
        "lowpad_batches": lowpad_batches,
        "lowpad_plan_s": plan_s,
        "greedy": padding_of(greedy_slots, real),
        "greedy_batches": greedy_batches,
        "dp_lowpad_count": padding_of(int(cuts.slots[best_at_lowpad]), real),
        "dp_lowpad_count_batches": int(cuts.batches[best_at_lowpad]),
        "optimum_same_count": padding_of(int(cuts.slots[-1]), real),
        "slack_cut": padding_of(int(cuts.slots[slack]), real),
        "slack_cut_batches": int(cuts.batches[slack]),
        "optimum_any_count": padding_of(int(cuts.slots[0]), real),
        "optimum_any_count_batches": int(cuts.batches[0]),
        "dp_s": statistics.median(seconds),
        "order_free_bound": bound,
        "bound_s": bound_s,
    }
    if fairseq:
        fs = run_child(fairseq, "fairseq-start", {"data": str(data), "max_tokens": budget})
        assert fs["samples_in_batches"] == len(src)
        row["fairseq"] = fs["padding"]
        row["fairseq_batches"] = fs["batches"]
        as_many = np.flatnonzero(cuts.batches <= fs["batches"])
        if len(as_many):
            best = int(as_many[np.argmin(cuts.slots[as_many])])
            row["dp_fairseq_count"] = padding_of(int(cuts.slots[best]), real)
            row["dp_fairseq_count_batches"] = int(cuts.batches[best])
    row["orders"] = order_study(src, tgt, budget)
    row["penalties"] = {}
    for penalty in knob:
        other = Planner(Sizes(src=src, tgt=tgt), config.replace(batch_penalty=penalty),
                        data_fingerprint=f"padding-optimum-{name}", cache=False).plan(1)
        row["penalties"][str(penalty)] = (other.stats.padding_fraction, len(other.table.starts))
    return row


def order_study(src: np.ndarray, tgt: np.ndarray, budget: int) -> dict[str, tuple[float, int]]:
    """lowpad's greedy cut of other sample orders: (padding, batches) for each, ties at random (seed 0).

    Only the order changes (``tokenmill.batching.order.curve_keys`` swapped for the run); the cut, the
    budget and the multiple are lowpad's. ``source, target`` is a plain two-key sort (long strips of
    target lengths), ``zigzag`` the same with the target direction flipped on odd source lengths, and
    the scaled Hilbert curves stretch one axis before the curve is taken.
    """
    from tokenmill.batching import BatchConfig, Sizes, lowpad
    from tokenmill.batching import order as orders

    def ranked(rank_of):
        def keys(s: np.ndarray, t: np.ndarray):
            _, first, inverse = np.unique(rank_of(s.astype(np.int64), t.astype(np.int64)), return_index=True,
                                          return_inverse=True)
            return inverse.astype(np.int64), s[first], t[first]
        return keys

    variants = {
        "Hilbert (lowpad)": orders.curve_keys,
        "source, target": ranked(lambda s, t: s * (1 << 20) + t),
        "zigzag": ranked(lambda s, t: s * (1 << 20) + np.where(s % 2 == 0, t, (1 << 19) - t)),
        "Hilbert, source x2": ranked(lambda s, t: orders.hilbert_index(2 * s, t, 14)),
        "Hilbert, target x2": ranked(lambda s, t: orders.hilbert_index(s, 2 * t, 14)),
    }
    config = BatchConfig(max_tokens=budget, required_batch_size_multiple=MULTIPLE)
    real = int(src.sum()) + int(tgt.sum())
    kept = orders.curve_keys
    out = {}
    try:
        for name, keys in variants.items():
            orders.curve_keys = keys
            cut = lowpad.cut_with(Sizes(src=src, tgt=tgt), config, np.random.default_rng(0))
            s, t = cut.src_in_order.astype(np.int64), cut.tgt_in_order.astype(np.int64)
            ends = np.asarray(cut.ends)
            slots, batches = check_cut(s, t, ends, budget, MULTIPLE)
            out[name] = (padding_of(slots, real), batches)
    finally:
        orders.curve_keys = kept
    return out


def pack_times(pairs: int, repeats: int = 5) -> None:
    """Seconds of the greedy cut and of ``pack_lowpad`` (default batch_penalty) on ``pairs`` of bench_batching's
    lengths in lowpad's curve order (the cut only; the order is made once, untimed), alternating, at
    budgets 4096 and 16384: median (min) of ``repeats``."""
    from tokenmill.batching import BatchConfig, pack_greedy, pack_lowpad
    from tokenmill.batching.order import curve_order

    src, tgt = lognormal_lengths(pairs, SEED)
    _, s, t = curve_order(None, src, tgt, np.random.default_rng(SEED))
    costs = np.maximum(s, t)
    penalty = BatchConfig().batch_penalty
    for budget in BUDGETS:
        times: dict[str, list[float]] = {"greedy": [], "lowpad": []}
        for _ in range(repeats):
            began = time.perf_counter()
            pack_greedy(costs, budget, None, MULTIPLE)
            times["greedy"].append(time.perf_counter() - began)
            began = time.perf_counter()
            pack_lowpad(costs, s, t, budget, None, MULTIPLE, penalty)
            times["lowpad"].append(time.perf_counter() - began)
        print(f"cut of {pairs:,} pairs in curve order, max_tokens {budget}: "
              + "; ".join(f"{name} {statistics.median(x):.2f} s ({min(x):.2f})" for name, x in times.items())
              + f" (batch_penalty {penalty})")


def print_table(rows: list[dict]) -> None:
    def pct(value) -> str:
        return "-" if value is None else f"{value:.2%}"

    def ratio(a, b) -> str:
        return "-" if a is None or not b else f"{a / b:.2f}"

    def cell(padding, batches, fairseq=None) -> str:
        versus = "" if fairseq is None else f", {ratio(padding, fairseq)}x"
        return f"{pct(padding)} ({batches:,}{versus})"

    print()
    print("Padding (batches, ratio to fairseq's padding) at the same max_tokens:")
    print()
    print("| corpus | pairs | max_tokens | fairseq batch_by_size | lowpad (default) | best DP cut, <= lowpad's batches "
          "| lowpad, batch_penalty 0 | optimum at its batch count | DP cut, <= 1% more | DP cut, <= fairseq's batches "
          "| optimum, any count | order-free bound | DP s |")
    print("|---|---:|---:|---|---|---|---|---|---|---|---|---:|---:|")
    for r in rows:
        label = r["corpus"] + (" (synthetic)" if r["synthetic"] else " (real)")
        fs = r.get("fairseq")
        fs_cell = "-" if fs is None else cell(fs, r["fairseq_batches"])
        dp_fs = r.get("dp_fairseq_count")
        dp_fs_cell = "-" if dp_fs is None else cell(dp_fs, r["dp_fairseq_count_batches"], fs)
        print(
            f"| {label} | {r['pairs']:,} | {r['max_tokens']} | {fs_cell} "
            f"| {cell(r['lowpad'], r['lowpad_batches'], fs)} "
            f"| {cell(r['dp_lowpad_count'], r['dp_lowpad_count_batches'], fs)} "
            f"| {cell(r['greedy'], r['greedy_batches'], fs)} "
            f"| {cell(r['optimum_same_count'], r['greedy_batches'], fs)} "
            f"| {cell(r['slack_cut'], r['slack_cut_batches'], fs)} | {dp_fs_cell} "
            f"| {cell(r['optimum_any_count'], r['optimum_any_count_batches'])} | {pct(r['order_free_bound'])} "
            f"| {r['dp_s']:.1f} |"
        )
    print()
    print("lowpad's cut (default batch_penalty) of other sample orders (padding, batches, ratio to fairseq's padding):")
    print()
    names = list(rows[0]["orders"]) if rows else []
    print("| corpus | max_tokens | " + " | ".join(names) + " |")
    print("|---|---:|" + "---|" * len(names))
    for r in rows:
        cells = [cell(p, b, r.get("fairseq")) for p, b in r["orders"].values()]
        print(f"| {r['corpus']} | {r['max_tokens']} | " + " | ".join(cells) + " |")
    knob = list(rows[0]["penalties"]) if rows else []
    if knob:
        print()
        print("lowpad with other batch_penalty values (padding, batches, ratio to fairseq's padding):")
        print()
        print("| corpus | max_tokens | " + " | ".join(f"batch_penalty {k}" for k in knob) + " |")
        print("|---|---:|" + "---|" * len(knob))
        for r in rows:
            cells = [cell(p, b, r.get("fairseq")) for p, b in r["penalties"].values()]
            print(f"| {r['corpus']} | {r['max_tokens']} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--selftest", action="store_true", help="check the DP against brute force and exit")
    parser.add_argument("--corpora", default=",".join(CORPORA))
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    parser.add_argument("--sample", type=int, default=1_000_000, help="pairs drawn for gettext-many")
    parser.add_argument("--repeats", type=int, default=1, help="DP runs per figure (median seconds)")
    parser.add_argument("--workdir", default="/tmp/tokenmill-bench")
    parser.add_argument("--pack-time", type=int, default=None, metavar="PAIRS",
                        help="only time the greedy cut and pack_lowpad on this many lognormal pairs, then exit")
    parser.add_argument("--penalties", default="0,0.05,0.1,0.2,0.4",
                        help="other batch_penalty values to plan lowpad with (comma-separated)")
    parser.add_argument("--json", dest="json_out", default=None, help="also write the rows to this file")
    options = parser.parse_args()
    if options.selftest:
        began = time.perf_counter()
        selftest()
        print(f"selftest took {time.perf_counter() - began:.1f} s")
        return
    if options.pack_time:
        pack_times(options.pack_time)
        return
    workdir = Path(options.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    names = [c for c in options.corpora.split(",") if c]
    unknown = sorted(set(names) - set(CORPORA))
    if unknown:
        parser.error(f"unknown corpora {unknown}; known: {', '.join(CORPORA)}")
    fairseq = fairseq_python()
    if fairseq is None:
        print("# fairseq interpreter not found: no fairseq column", file=sys.stderr)
    corpora = load_corpora(names, workdir, options.sample)
    knob = [float(v) for v in options.penalties.split(",") if v]
    rows = []
    for name in names:
        if name not in corpora:
            continue
        src, tgt, data = corpora[name]
        for budget in (int(b) for b in options.budgets.split(",")):
            began = time.perf_counter()
            rows.append(measure(name, src, tgt, data, budget, fairseq, options.repeats, knob))
            print(f"# {name}, max_tokens {budget}: {time.perf_counter() - began:.0f} s", file=sys.stderr, flush=True)
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print_table(rows)
    if options.json_out:
        Path(options.json_out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
