"""Mix changes at resume for Megatron blends (``load_state_dict(state, allow_mix_change=True)``).

A state saved under one blend resumes under another with other weights, a member retired and a member
added: the rest of the pass is the new blend's draw less what was served, member by member. Checked
from every micro step of a pass, at world sizes 1..8 before and after, and through a chain of changes:
no member sample is served twice, each member goes on from its first unserved sample, a retired member
stops and a new one starts, the rest is whole global batches with the same micro batches on every rank.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import tokenmill
from tokenmill.batching.gpt_plan import GPTBatchConfig
from tokenmill.data.blend_members import member_key
from tokenmill.data.blending import BlendedDataset
from tokenmill.data.gpt_dataset import GPTDataset, GPTDatasetConfig
from tokenmill.errors import TokenmillError
from tokenmill.store import IndexedDataset, IndexedWriter

GLOBAL = 840  # lcm(1..8): one global batch divides over every world size 1..8 with micro batches of 1
CONFIG = GPTBatchConfig(global_batch_size=GLOBAL, micro_batch_size=1)
SIZE = 2 * GLOBAL  # two global batches per pass


@pytest.fixture(scope="module")
def members(tmp_path_factory) -> dict[str, GPTDataset]:
    rng = np.random.default_rng(3)
    prefix = tmp_path_factory.mktemp("blend") / "docs"
    with IndexedWriter(prefix, layout="megatron", dtype=np.uint16) as writer:
        for d in range(300):
            writer.add_item(np.append(2 + (17 * d + np.arange(rng.integers(1, 90))) % 997, 1))
            writer.end_document()
    store = IndexedDataset(prefix)
    return {name: GPTDataset(store, GPTDatasetConfig(seq_length=8, seed=seed, num_samples=SIZE))
            for name, seed in (("a", 1), ("b", 2), ("c", 3))}


@pytest.fixture(scope="module")
def blends(members) -> dict[str, BlendedDataset]:
    a, b, c = members["a"], members["b"], members["c"]
    return {
        "old": BlendedDataset([a, b], [0.5, 0.5], size=SIZE),
        "new": BlendedDataset([b, c], [0.3, 0.7], size=SIZE),  # a retired, c added, b re-weighted
        "third": BlendedDataset([c, a, b], [1, 1, 1], size=SIZE),  # a back: it goes on after what it served
    }


def iterators(blend, world):
    return [tokenmill.batches(blend, CONFIG, rank=r, world_size=world) for r in range(world)]


def samples(blend, positions) -> list[tuple[str, int]]:
    """(member key, sample of that member) of blend positions."""
    members = blend.mix["datasets"]
    positions = np.asarray(positions, dtype=np.int64)
    return list(zip([members[d] for d in blend.dataset_index[positions].tolist()],
                    blend.dataset_sample_index[positions].tolist(), strict=True))


def serve(its, steps=None) -> list[tuple[str, int]]:
    """``steps`` micro steps (None: the rest of the pass) of every rank, as member samples in the order
    served (step by step, rank by rank); ranks must have the same number of micro batches left."""
    left = {it.num_steps() - it.step for it in its}
    assert len(left) == 1, f"unequal micro batches left: {left}"
    count = left.pop() if steps is None else steps
    plans = [it.plan() for it in its]
    start = its[0].step
    ids = [plan.indices(t, it.rank) for t in range(start, start + count) for it, plan in zip(its, plans, strict=True)]
    for it in its:
        it.seek(it.epoch, start + count)
    return samples(its[0].dataset, np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64))


def rest_of_pass(its) -> list[tuple[str, int]]:
    """What the resumed ranks serve of the first pass (none when what was left is less than one global
    batch: the iterators then stand at the next pass)."""
    return serve(its) if its[0].epoch == 1 else []


def resume(blend, world, state, **kwargs):
    its = iterators(blend, world)
    for it in its:
        it.load_state_dict(state, **kwargs)
    return its


def check_rest(before, rest, blend) -> None:
    """The rest is the blend's draw less ``before``, member by member, cut to whole global batches."""
    served = Counter(fp for fp, _ in before)
    both = Counter(before) + Counter(rest)
    assert max(both.values(), default=1) == 1, "a member sample served twice"
    drawn = Counter(blend.mix["datasets"][d] for d in blend.dataset_index.tolist())
    left = {fp: max(n - served[fp], 0) for fp, n in drawn.items()}
    assert len(rest) == sum(left.values()) // GLOBAL * GLOBAL  # whole global batches of what is left
    by_member: dict[str, list[int]] = {}
    for fp, k in rest:
        by_member.setdefault(fp, []).append(k)
    assert set(by_member) <= {fp for fp, n in left.items() if n}, "a member with nothing left (or retired) served"
    for fp, ks in by_member.items():  # each member goes on from its first unserved sample, in order
        assert ks == list(range(served[fp], served[fp] + len(ks))) and len(ks) <= left[fp]


def test_every_micro_step_changes_blend_and_world_size(blends, members):
    old_world = 8
    total = iterators(blends["old"], old_world)[0].num_steps()
    for step in range(total + 1):
        old = iterators(blends["old"], old_world)
        before = serve(old, step)
        world = 1 + step % 8
        new = resume(blends["new"], world, old[0].state_dict(), allow_mix_change=True)
        if step == total:  # saved at the end of the pass: the next pass is the new blend's own
            assert (new[0].epoch, new[0].step, new[0].segments) == (2, 0, [])
            continue
        rest = rest_of_pass(new)
        check_rest(before, rest, blends["new"])
        assert member_key(members["a"]) not in {fp for fp, _ in rest}  # retired
        assert member_key(members["c"]) in {fp for fp, _ in rest}  # added


@pytest.mark.parametrize("old_world", range(1, 9))
def test_world_sizes_one_to_eight_before_and_after(blends, old_world):
    total = iterators(blends["old"], old_world)[0].num_steps()
    for step in sorted({1, total // 3, total - 1}):
        old = iterators(blends["old"], old_world)
        before = serve(old, step)
        state = old[0].state_dict()
        for world in range(1, 9):
            check_rest(before, rest_of_pass(resume(blends["new"], world, state, allow_mix_change=True)),
                       blends["new"])


def test_a_chain_of_changes_resumes_exactly(blends, members):
    first = iterators(blends["old"], 2)
    served = serve(first, 300)
    second = resume(blends["new"], 3, first[0].state_dict(), allow_mix_change=True)
    served += serve(second, 70)
    state = second[0].state_dict()
    assert state["step"] == 70 and state["segments"][0][:2] == [2, 300]
    assert state["segments"][0][2] == blends["old"].mix  # the part under the first blend records it
    again = resume(blends["new"], 3, state)  # the same blend: no flag, exactly the same micro batches
    for a, b in zip(again, second, strict=True):
        assert [a.indices_at(1, t).tolist() for t in range(a.step, a.num_steps())] == [
            b.indices_at(1, t).tolist() for t in range(b.step, b.num_steps())]
    third = resume(blends["third"], 4, state, allow_mix_change=True)
    assert len(third[0].segments) == 2
    assert third[0].state_dict()["consumed_samples"] == 300 * 2 + 70 * 3  # nothing of part three yet
    fp, k = samples(blends["third"], third[1].indices_at(1, 0))[0]  # the rows are the members' samples
    member = next(m for m in members.values() if member_key(m) == fp)
    np.testing.assert_array_equal(third[1].batch_at(1, 0)["tokens"][0], member.get_batch([k])["tokens"][0])
    rest = serve(third)
    check_rest(served, rest, blends["third"])
    a = member_key(members["a"])
    assert next(k for fp, k in rest if fp == a) == sum(fp == a for fp, _ in served)  # a goes on where it stopped


def test_without_the_flag_another_blend_is_refused_naming_it(blends):
    old = iterators(blends["old"], 2)
    serve(old, 5)
    state = old[0].state_dict()
    with pytest.raises(TokenmillError, match=r"selection\.blend\.weights.*allow_mix_change"):
        iterators(blends["new"], 2)[0].load_state_dict(state)
    legacy = {**state, "config": {k: v for k, v in state["config"].items() if k != "selection"}}
    with pytest.raises(TokenmillError, match="the data differ"):  # no mix recorded: told apart by its data
        iterators(blends["new"], 2)[0].load_state_dict(legacy, allow_mix_change=True)


def test_a_state_saved_before_blends_recorded_their_mix_resumes(blends):
    old = iterators(blends["old"], 2)
    serve(old, GLOBAL // 2)  # one global batch: a step boundary for every world size
    state = old[0].state_dict()
    legacy = {**state, "config": {k: v for k, v in state["config"].items() if k != "selection"}}
    for world in (2, 3):
        resumed = resume(blends["old"], world, legacy)
        expected = resume(blends["old"], world, state)
        assert [it.indices_at(1, it.step).tolist() for it in resumed] == [
            it.indices_at(1, it.step).tolist() for it in expected]


def test_members_added_to_a_blend_of_itself(members):
    """Growing a blend (a third member joins) at every global step boundary of two ranks."""
    a, b, c = members["a"], members["b"], members["c"]
    two = BlendedDataset([a, b], [1, 3], size=SIZE)
    three = BlendedDataset([a, b, c], [1, 3, 2], size=SIZE)
    for steps in range(0, SIZE // 2, 140):
        old = iterators(two, 2)
        before = serve(old, steps)
        rest = rest_of_pass(resume(three, 2, old[0].state_dict(), allow_mix_change=True))
        check_rest(before, rest, three)
