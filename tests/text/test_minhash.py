"""MinHash signatures against datasketch 2 (same seed, its default affine32 scheme, fed the same shingle
hashes: the same values), what a shingle ignores, band keys, and the connected components near-dedup keeps
the first item of (against a plain union-find)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tests.text.near_dup_text import docstrings
from tokenmill.prepare.near_components import DROPS, EDGES, KEPT, resolve_clusters
from tokenmill.text.minhash import MinHashSettings, band_keys, chunk_band_keys, item_shingles, signatures, words_of


@pytest.mark.parametrize("settings", [MinHashSettings(), MinHashSettings(ngram=3, bands=9, rows=13, seed=42)])
def test_signatures_are_datasketchs(settings):
    datasketch = pytest.importorskip("datasketch")
    docs = [*docstrings(60), "", "two words", "Ünïcödé text — with “quotes” and 中文字符 in it"]
    hashes, items = item_shingles(docs, None, "src", settings.ngram)
    ours = signatures(hashes, items, len(docs), settings)
    for i in range(len(docs)):
        theirs = datasketch.MinHash(num_perm=settings.permutations, seed=settings.seed, hashfunc=int)
        theirs.update_batch(hashes[items == i].tolist())
        assert theirs.hashvalues.dtype == np.uint32
        assert np.array_equal(theirs.hashvalues, ours[i]), i
    assert (ours[len(docs) - 3] == np.uint32(2**32 - 1)).all()  # no words: the empty signature


def test_case_punctuation_and_whitespace_do_not_change_shingles():
    a, b = "The quick, brown fox -- jumps over the lazy dog.", "the  quick brown\tfox jumps over the LAZY dog"
    assert words_of(a) == words_of(b)
    ha, _ = item_shingles([a], None, "src", 5)
    hb, _ = item_shingles([b], None, "src", 5)
    assert np.array_equal(ha, hb) and len(ha) == 5
    hc, _ = item_shingles(["the quick brown fox jumps over the lazy cat"], None, "src", 5)
    assert len(set(ha.tolist()) & set(hc.tolist())) == 4  # one word changed: only the last 5-gram differs


def test_sides_of_a_pair():
    src, tgt = ["a b c d e f g"], ["h i j k l m n"]
    both, _ = item_shingles(src, tgt, "both", 5)
    only_src, _ = item_shingles(src, tgt, "src", 5)
    only_tgt, _ = item_shingles(src, tgt, "tgt", 5)
    assert len(both) == 6 and set(both.tolist()) == set(only_src.tolist()) | set(only_tgt.tolist())
    swapped, _ = item_shingles(tgt, src, "src", 5)
    assert set(only_tgt.tolist()) != set(swapped.tolist())  # the target's shingles are tagged


def test_band_keys_meet_only_on_equal_bands():
    settings = MinHashSettings(bands=4, rows=2)
    signature = np.array([[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 0, 4, 5, 6, 0, 0], [2, 1, 4, 3, 6, 5, 8, 7]],
                         dtype=np.uint32)
    keys = band_keys(signature, settings)
    assert (keys[0] == keys[1]).tolist() == [True, False, True, False]
    assert not np.isin(keys[2], keys[0]).any()  # the same values in another order or band never meet
    same_values = np.array([[9, 9, 9, 9, 9, 9, 9, 9]], dtype=np.uint32)
    assert len(set(band_keys(same_values, settings)[0].tolist())) == 4  # the band's number is in its key


def test_close_documents_share_a_band_and_far_ones_do_not():
    docs = list(docstrings(200))
    edited = [d.replace(" the ", " a ", 1) for d in docs[:50]]
    keys, has = chunk_band_keys(docs + edited, None, "src", MinHashSettings())
    assert has.all()
    shared = [(keys[i] == keys[200 + i]).any() for i in range(50)]
    assert sum(shared) >= 48
    unrelated = sum((keys[i][None, :] == keys[i + 1 : 200]).any() for i in range(200))
    assert unrelated == 0


def union_find_minima(edges: list[tuple[int, int]], nodes: int) -> list[int]:
    parent = list(range(nodes))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for u, v in edges:
        ru, rv = find(u), find(v)
        if ru != rv:
            parent[max(ru, rv)] = min(ru, rv)
    return [find(x) for x in range(nodes)]


def resolved(tmp_path, edges: list[tuple[int, int]], nodes: int, block: int, nodes_per_partition: int) -> list[int]:
    """The label of each of ``nodes`` nodes after :func:`resolve_clusters` on disk (itself where it is kept
    or met no one)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    np.array(edges, dtype=np.int64).reshape(-1, 2).tofile(tmp_path / EDGES)
    dropped = resolve_clusters(tmp_path, block=block, nodes_per_partition=nodes_per_partition)
    drops, kept = np.load(tmp_path / DROPS), np.load(tmp_path / KEPT)
    assert dropped == len(drops) == len(kept) and np.all(np.diff(drops) > 0)
    assert not (tmp_path / EDGES).exists() and sorted(p.name for p in tmp_path.iterdir()) == [DROPS, KEPT]
    label = np.arange(nodes)
    label[drops] = kept
    return label.tolist()


@pytest.mark.parametrize("seed", range(5))
def test_components_match_a_union_find(tmp_path, seed):
    """Random graphs with long chains (many rounds), in any edge order, with repeated edges (as find_edges
    writes an edge once per partition), through many small partitions and blocks and through one."""
    rng = random.Random(seed)
    nodes = rng.randint(2, 400)
    edges = [(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(rng.randint(1, nodes))]
    edges += [(i, i + 1) for i in range(0, nodes - 1, 7)]  # long chains need many rounds
    edges = [e for e in edges if e[0] != e[1]] + edges[:5]
    edges = [(min(e), max(e)) for e in edges]  # find_edges: the bucket's first item, then the item
    expected = union_find_minima(edges, nodes)
    assert resolved(tmp_path / "one", edges, nodes, 1 << 19, 1 << 20) == expected
    shuffled = rng.sample(edges, len(edges))  # any edge order: the same components
    assert resolved(tmp_path / "many", shuffled, nodes, 7, 16) == expected


def test_a_star_of_many_near_duplicates_and_no_edges(tmp_path):
    """One item met by thousands (read in blocks far smaller than its arcs), ranges of drops written
    apart, and a run that found no edge."""
    edges = [(5, i) for i in range(6, 3000)] + [(2, 4), (1, 2), (3000, 3001)]
    label = resolved(tmp_path / "star", edges, 3002, 64, 100)
    assert label[6:3000] == [5] * 2994 and label[:6] == [0, 1, 1, 3, 1, 5] and label[3001] == 3000
    assert resolved(tmp_path / "none", [], 3, 64, 100) == [0, 1, 2]
