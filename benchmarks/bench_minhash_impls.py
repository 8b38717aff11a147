"""Which MinHash to build near-dedup on: tokenmill's numpy one, rensa (Rust) and datasketch, same documents.

Every side gets the same shingles (tokenmill's 5-word shingle hashes, ``tokenmill.text.minhash``) and makes
112 permutations (14 bands x 8 rows); the time is the signatures' alone (shingling is timed apart, it is
the same for all). datasketch 2 (default ``affine32`` scheme, same seed) is given the shingle hashes as
they are, so its signatures must equal tokenmill's (checked here); rensa's C-MinHash permutations are its own
(``digest_matrix_from_flat_token_hashes``: one call for the whole batch, the fastest entry it has).

    python benchmarks/bench_minhash_impls.py --megabytes 5
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from near_dup_corpus import documents

from tokenmill.text.minhash import MinHashSettings, item_shingles, signatures


def _best(function, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--megabytes", type=float, default=5.0)
    parser.add_argument("--datasketch-docs", type=int, default=300, help="documents datasketch signs (it is slow)")
    args = parser.parse_args()
    docs = documents(args.megabytes)
    size = sum(len(d.encode()) for d in docs) / 1e6
    settings = MinHashSettings()
    started = time.perf_counter()
    hashes, items = item_shingles(docs, None, "src", settings.ngram)
    shingle_s = time.perf_counter() - started
    ours_s = _best(lambda: signatures(hashes, items, len(docs), settings), 3)
    ours = signatures(hashes, items, len(docs), settings)
    rows = [("shingles (shared by all)", shingle_s, size)]
    rows.append(("tokenmill numpy signatures", ours_s, size))
    try:
        import rensa
        offsets = np.searchsorted(items, np.arange(len(docs) + 1)).astype(np.uint64)
        rensa_s = _best(lambda: rensa.RMinHash.digest_matrix_from_flat_token_hashes(
            hashes, offsets, settings.permutations, settings.seed), 3)
        name = f"rensa {getattr(rensa, '__version__', '0.5')} digest_matrix_from_flat_token_hashes"
        rows.append((name, rensa_s, size))
    except ImportError:
        print("rensa is not installed: pip install rensa")
    try:
        import datasketch
        n = min(args.datasketch_docs, len(docs))
        cut = int(np.searchsorted(items, n))
        per_doc = np.split(hashes[:cut], np.searchsorted(items[:cut], np.arange(1, n)))
        started = time.perf_counter()
        theirs = []
        for doc_hashes in per_doc:
            m = datasketch.MinHash(num_perm=settings.permutations, seed=settings.seed, hashfunc=int)
            m.update_batch(doc_hashes.tolist())
            theirs.append(m.hashvalues)
        ds_s = time.perf_counter() - started
        part = sum(len(d.encode()) for d in docs[:n]) / 1e6
        same = bool(np.array_equal(np.array(theirs, dtype=np.uint64), ours[:n].astype(np.uint64)))
        rows.append((f"datasketch {datasketch.__version__} MinHash.update_batch ({n} docs; signatures equal "
                     f"tokenmill's: {same})", ds_s, part))
    except ImportError:
        print("datasketch is not installed: pip install datasketch")
    print(f"{len(docs)} documents, {size:.1f} MB, {len(hashes)} shingles, 112 permutations, one core\n")
    print("| step | seconds | MB/s |\n|---|---|---|")
    for name, seconds, mb in rows:
        print(f"| {name} | {seconds:.3f} | {mb / seconds:.1f} |")


if __name__ == "__main__":
    main()
