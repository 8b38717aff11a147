"""The consumption ledger of Megatron GPT samples and blends (``iterator.ledger()`` per blend member): equal to
the samples and tokens counted from the micro batches actually served, on every rank, before and after a
blend change at resume (a member retired, one added), after an elastic resume, across passes (the totals a
state records), and for one GPT dataset."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import tokenmill
from tokenmill.batching.gpt_plan import GPTBatchConfig
from tokenmill.data.blend_members import member_key
from tokenmill.data.blending import BlendedDataset
from tokenmill.data.gpt_dataset import GPTDataset, GPTDatasetConfig
from tokenmill.loader.ledger import describe
from tokenmill.store import IndexedDataset, IndexedWriter

CONFIG = GPTBatchConfig(global_batch_size=24, micro_batch_size=2)  # micro steps divide at world sizes 2, 3, 4
SIZE = 240  # ten global batches per pass
SEQ = 8


@pytest.fixture(scope="module")
def members(tmp_path_factory) -> dict[str, GPTDataset]:
    rng = np.random.default_rng(5)
    prefix = tmp_path_factory.mktemp("ledger") / "docs"
    with IndexedWriter(prefix, layout="megatron", dtype=np.uint16) as writer:
        for d in range(200):
            writer.add_item(np.append(2 + (13 * d + np.arange(rng.integers(1, 60))) % 991, 1))
            writer.end_document()
    store = IndexedDataset(prefix)
    return {name: GPTDataset(store, GPTDatasetConfig(seq_length=SEQ, seed=seed, num_samples=SIZE))
            for name, seed in (("a", 1), ("b", 2), ("c", 3))}


class Served:
    """Samples and tokens per member fingerprint, counted from the micro batches the ranks were handed."""

    def __init__(self) -> None:
        self.samples: Counter[str] = Counter()
        self.tokens: Counter[str] = Counter()

    def take(self, its, steps: int) -> None:
        """``steps`` micro batches of every rank (their own iterators: the position moves on)."""
        streams = [iter(it) for it in its]
        for _ in range(steps):
            for it, stream in zip(its, streams, strict=True):
                batch = next(stream)
                names = it.dataset.mix["datasets"] if hasattr(it.dataset, "mix") else [it.dataset.fingerprint()]
                which = batch.get("dataset_id", np.zeros(len(batch["tokens"]), dtype=np.int64))
                for d, row in zip(np.asarray(which).tolist(), batch["tokens"], strict=True):
                    self.samples[names[d]] += 1
                    self.tokens[names[d]] += int(row.size)

    def copy(self) -> Served:
        out = Served()
        out.samples, out.tokens = Counter(self.samples), Counter(self.tokens)
        return out


def by_member(table: dict, key: str) -> dict[str, int]:
    return {row["member"]: row[key] for row in table["sources"].values() if row[key]}


def check(ledger: dict, epoch: Served, total: Served) -> None:
    assert by_member(ledger, "epoch_samples") == {k: v for k, v in epoch.samples.items() if v}
    assert by_member(ledger, "epoch_tokens") == {k: v for k, v in epoch.tokens.items() if v}
    assert by_member(ledger, "total_samples") == {k: v for k, v in total.samples.items() if v}
    assert by_member(ledger, "total_tokens") == {k: v for k, v in total.tokens.items() if v}


def ranks(blend, world):
    return [tokenmill.batches(blend, CONFIG, rank=r, world_size=world) for r in range(world)]


def resumed(blend, world, state, **options):
    its = ranks(blend, world)
    for it in its:
        it.load_state_dict(state, **options)
    return its


def test_the_ledger_follows_a_blend_change_and_an_elastic_resume(members):
    a, b, c = members["a"], members["b"], members["c"]
    old = BlendedDataset([a, b], [0.6, 0.4], size=SIZE)
    new = BlendedDataset([b, c], [0.3, 0.7], size=SIZE)  # a retired, c added
    served = Served()
    first = ranks(old, 2)
    served.take(first, 18)
    check(first[0].ledger(), served, served)
    changed = resumed(new, 3, first[0].state_dict(), allow_mix_change=True)
    check(changed[0].ledger(), served, served)  # nothing served yet under the new blend
    served.take(changed, 8)
    table = changed[0].ledger()
    check(table, served, served)
    fingerprints = {name: member_key(d) for name, d in members.items()}
    assert {row["member"] for row in table["sources"].values()} == set(fingerprints.values())
    retired = next(name for name, row in table["sources"].items() if row["member"] == fingerprints["a"])
    assert "not in this blend" in retired and served.samples[fingerprints["c"]] > 0
    elastic = resumed(new, 4, changed[0].state_dict())
    check(elastic[0].ledger(), served, served)
    served.take(elastic, 2)
    check(elastic[0].ledger(), served, served)
    assert "consumption ledger at epoch 1" in describe(elastic[0].ledger())


def test_pass_totals_travel_with_the_state(members):
    a, b, c = members["a"], members["b"], members["c"]
    old = BlendedDataset([a, b], [0.5, 0.5], size=SIZE)
    new = BlendedDataset([c, b], [0.5, 0.5], size=SIZE)
    pass_one = Served()
    first = ranks(old, 2)
    pass_one.take(first, 18)
    changed = resumed(new, 4, first[0].state_dict(), allow_mix_change=True)
    pass_one.take(changed, changed[0].num_steps() - changed[0].step)  # the rest of pass 1
    both = pass_one.copy()
    pass_two = Served()
    for part in (pass_two, both):  # three micro batches of pass 2 under the new blend
        part.take(resumed(new, 4, changed[0].state_dict()), 3)
    moved = resumed(new, 4, changed[0].state_dict())
    Served().take(moved, 3)
    state = moved[0].state_dict()
    assert state["epoch"] == 2 and state["ledger"]["epoch"] == 2  # pass 1 ran in parts: its totals are recorded
    table = resumed(new, 4, state)[0].ledger()
    assert (table["epoch"], table["step"]) == (2, 3)
    check(table, pass_two, both)


def test_one_gpt_dataset_counts_consumed_samples(members):
    data = members["b"]
    served = Served()
    its = ranks(data, 2)
    served.take(its, 6)
    moved = resumed(data, 3, its[0].state_dict())  # elastic
    served.take(moved, 4)
    table = moved[0].ledger()
    check(table, served, served)
    assert sum(row["epoch_samples"] for row in table["sources"].values()) == moved[0].state_dict()["consumed_samples"]
