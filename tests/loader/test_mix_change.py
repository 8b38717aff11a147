"""Mixture changes at resume (``load_state_dict(state, allow_mix_change=True)``) and the consumption ledger.

A state saved under one sampled mix resumes under another (weights, temperature, a direction switched
off or on): the rest of the epoch is the new mix's draw less what was served, so over the change no
sample is served more often than the larger of the two mixes' draws asks for, the rest holds exactly
the new draw's remaining counts, a retired direction stops and a new one starts, and every rank runs
the same number of steps. Checked from every step of an epoch of the small multi-direction corpus, with
world sizes 1..8 before and after, for token-budget batches and packed rows, and through a chain of
changes. The ledger computed from a state equals what the batches served.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from click.testing import CliRunner

from tokenmill.batching.config import BatchConfig
from tokenmill.batching.packed_pairs import PackConfig, PackedPairPlanner
from tokenmill.batching.sampled import SampledMix, SampledPlanner
from tokenmill.cli import cli
from tokenmill.data.sampling import SamplingConfig
from tokenmill.errors import TokenmillError
from tokenmill.loader import BatchIterator

TUR, HIN, FRA = "eng_Latn-tur_Latn", "eng_Latn-hin_Deva", "fra_Latn-eng_Latn"
BATCHES = BatchConfig(max_tokens=240, required_batch_size_multiple=2)
PACK = PackConfig(max_length=64, rows_per_batch=2)
OLD = SamplingConfig(temperature=5.0, seed=3)  # upsamples fra-eng
RETIRE = SamplingConfig(weights={TUR: 1.0, HIN: 2.0, FRA: 0.0}, seed=4)  # fra-eng stops
NO_HINDI = SamplingConfig(weights={TUR: 1.0, HIN: 0.0, FRA: 1.0}, seed=5)
ADD = SamplingConfig(weights={TUR: 1.0, HIN: 1.0, FRA: 1.0}, seed=6)  # hin starts again after NO_HINDI


def planner_of(dataset, sampling, world_size, packed=False):
    if packed:
        return PackedPairPlanner(dataset, PACK, selection=SampledMix(dataset, sampling), world_size=world_size,
                                 cache=False)
    return SampledPlanner(dataset, BATCHES, sampling, world_size=world_size, cache=False)


def iterators(dataset, sampling, world_size, packed=False):
    planner = planner_of(dataset, sampling, world_size, packed)
    return [BatchIterator(dataset, planner=planner, collate=None, rank=r, world_size=world_size, infinite=True)
            for r in range(world_size)]


def ids_of(batch) -> list[int]:
    if hasattr(batch, "row_ends"):  # a PackedBatch
        return [int(i) for i in batch.ids]
    return [int(i) for i in np.asarray(batch)]


def run(its, steps=None) -> Counter:
    """Serve ``steps`` steps (None: to the end of the epoch) on every rank; the ids served."""
    counts = {it.num_steps() - it.step for it in its}
    assert len(counts) == 1  # every rank has the same number of steps left
    left = counts.pop() if steps is None else steps
    served: Counter = Counter()
    streams = [iter(it) for it in its]
    for _ in range(left):
        for stream in streams:
            batch = ids_of(next(stream))
            assert batch  # no rank idles
            served.update(batch)
    return served


def drawn(dataset, sampling, epoch=1) -> Counter:
    return Counter(SampledMix(dataset, sampling).sample(epoch).ids.tolist())


def check_rest(dataset, before: Counter, rest: Counter, new: SamplingConfig, world: int) -> None:
    expected = drawn(dataset, new) - before  # the new draw less what was served (Counter subtraction)
    if sum(expected.values()) >= world:
        assert rest == expected
    else:  # fewer items left than ranks: the epoch ends (counted as left_fewer_than_ranks)
        assert not rest
    fra = dataset.directions.index(FRA)
    if new is RETIRE:
        assert not any(dataset.direction_of(np.array([i]))[0] == fra for i in rest)


@pytest.mark.parametrize("packed", [False, True], ids=["tokens", "packed"])
def test_every_step_of_an_epoch_changes_mix_without_repeating_a_sample(multi_dataset, packed):
    total = iterators(multi_dataset, OLD, 2, packed)[0].num_steps()
    for step in range(total + 1):
        old = iterators(multi_dataset, OLD, 2, packed)
        before = run(old, step)
        state = old[0].state_dict()
        new = iterators(multi_dataset, RETIRE, 2, packed)
        for it in new:
            it.load_state_dict(state, allow_mix_change=True)
        if step == total:  # saved at the end of epoch 1: epoch 2 is the new mix's own
            assert new[0].epoch == 2 and new[0].segments == []
            continue
        rest = run(new)
        check_rest(multi_dataset, before, rest, RETIRE, 2)


@pytest.mark.parametrize("packed", [False, True], ids=["tokens", "packed"])
@pytest.mark.parametrize("old_world", [1, 3])
def test_mix_and_world_size_change_together(multi_dataset, old_world, packed):
    total = iterators(multi_dataset, OLD, old_world, packed)[0].num_steps()
    for step in sorted({1, total // 2, total - 1}):
        old = iterators(multi_dataset, OLD, old_world, packed)
        before = run(old, step)
        state = old[0].state_dict()
        for world in range(1, 9):
            new = iterators(multi_dataset, NO_HINDI, world, packed)
            for it in new:
                it.load_state_dict(state, allow_mix_change=True)
            rest = run(new) if new[0].epoch == 1 else Counter()  # (fewer packed rows left than ranks: epoch 2)
            check_rest(multi_dataset, before, rest, NO_HINDI, world)


def test_a_chain_of_changes_resumes_exactly_and_adds_a_direction(multi_dataset):
    first = iterators(multi_dataset, OLD, 2)
    served = run(first, 3)
    second = iterators(multi_dataset, NO_HINDI, 3)
    for it in second:
        it.load_state_dict(first[0].state_dict(), allow_mix_change=True)
    served += run(second, 2)
    state = second[0].state_dict()
    assert state["step"] == 2 and state["segments"][0][:2] == [2, 3]  # the part under the first mix...
    assert state["segments"][0][2]["sampling"]["temperature"] == 5.0  # ...records that mix
    # the same mix resumes the chain exactly (no flag needed): same batches as going on
    again = iterators(multi_dataset, NO_HINDI, 3)
    for it in again:
        it.load_state_dict(state)
    assert [ids_of(again[1].batch_at(1, t)) for t in range(again[1].num_steps())] == [
        ids_of(second[1].batch_at(1, t)) for t in range(second[1].num_steps())
    ]
    third = iterators(multi_dataset, ADD, 4)
    for it in third:
        it.load_state_dict(state, allow_mix_change=True)
    assert len(third[0].segments) == 2  # each change is a segment
    rest = run(third)
    check_rest(multi_dataset, served, rest, ADD, 4)
    hin = multi_dataset.directions.index(HIN)
    assert any(multi_dataset.direction_of(np.array([i]))[0] == hin for i in rest)  # the new direction starts


def test_without_the_flag_a_changed_mix_is_refused_naming_it(multi_dataset):
    old = iterators(multi_dataset, OLD, 1)
    run(old, 2)
    new = iterators(multi_dataset, RETIRE, 1)[0]
    with pytest.raises(TokenmillError, match=r"selection\.sampling\.temperature.*allow_mix_change"):
        new.load_state_dict(old[0].state_dict())


def test_a_cut_setting_change_is_still_refused_with_the_flag(multi_dataset):
    old = iterators(multi_dataset, OLD, 1)
    run(old, 2)
    planner = SampledPlanner(multi_dataset, BatchConfig(max_tokens=300), RETIRE, cache=False)
    new = BatchIterator(multi_dataset, planner=planner, collate=None)
    with pytest.raises(TokenmillError, match="max_tokens"):
        new.load_state_dict(old[0].state_dict(), allow_mix_change=True)


def ledger_counts(dataset, served: Counter) -> dict[str, tuple[int, int]]:
    out = {name: [0, 0] for name in dataset.directions}
    for i, k in served.items():
        name = dataset.directions[int(dataset.direction_of(np.array([i]))[0])]
        tokens = int(dataset.src_sizes[np.array([i])][0]) + int(dataset.tgt_sizes[np.array([i])][0])
        out[name][0] += k
        out[name][1] += k * tokens
    return {k: tuple(v) for k, v in out.items()}


def test_ledger_from_the_state_equals_what_was_served(multi_dataset):
    first = iterators(multi_dataset, OLD, 2)
    epoch1 = run(first)  # all of epoch 1
    served2 = run(first, 2)  # two steps of epoch 2
    second = iterators(multi_dataset, RETIRE, 3)
    for it in second:
        it.load_state_dict(first[0].state_dict(), allow_mix_change=True)
    served2 += run(second, 1)
    state = second[0].state_dict()
    resumed = iterators(multi_dataset, RETIRE, 3)[0]
    resumed.load_state_dict(state)
    table = resumed.ledger()
    assert (table["epoch"], table["step"]) == (2, 1)  # one step into the part after the change
    epoch_now = ledger_counts(multi_dataset, served2)
    total = ledger_counts(multi_dataset, epoch1 + served2)
    for name, row in table["sources"].items():
        assert (row["epoch_samples"], row["epoch_tokens"]) == epoch_now[name]
        assert (row["total_samples"], row["total_tokens"]) == total[name]
    # the rest of epoch 2, then a state in epoch 3: the totals survive the end of the changed epoch
    served2 += run(second)
    later = second[0].state_dict()
    assert later["epoch"] == 3 and later["segments"] == [] and later["ledger"]["epoch"] == 3
    resumed = iterators(multi_dataset, RETIRE, 3)[0]
    resumed.load_state_dict(later)
    total = ledger_counts(multi_dataset, epoch1 + served2)
    assert {n: (r["total_samples"], r["total_tokens"]) for n, r in resumed.ledger()["sources"].items()} == total


def test_cli_prints_the_ledger_of_a_state_and_needs_the_flag_for_another_mix(multi_data_bin, multi_dataset, tmp_path):
    sampling = SamplingConfig(temperature=5.0, seed=1)  # what `tokenmill batches --temperature 5 --seed 1` makes
    planner = SampledPlanner(multi_dataset, BatchConfig(max_tokens=240, seed=1), sampling, world_size=2, cache=False)
    its = [BatchIterator(multi_dataset, planner=planner, collate=None, rank=r, world_size=2, infinite=True)
           for r in range(2)]
    served = run(its, 3)
    state = tmp_path / "state.json"
    state.write_text(json.dumps(its[0].state_dict()), encoding="utf-8")
    args = ["batches", str(multi_data_bin), "--max-tokens", "240", "--world-size", "2", "--no-cache",
            "--directions", ",".join(multi_dataset.directions), "--state", str(state), "--json"]
    result = CliRunner().invoke(cli, [*args, "--temperature", "5"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["ledger"]["sources"]
    expected = ledger_counts(multi_dataset, served)
    assert {n: (r["epoch_samples"], r["epoch_tokens"]) for n, r in rows.items()} == expected
    refused = CliRunner().invoke(cli, [*args, "--temperature", "2"])
    assert refused.exit_code == 2 and "--allow-mix-change" in refused.output
    changed = CliRunner().invoke(cli, [*args, "--temperature", "2", "--allow-mix-change"])
    assert changed.exit_code == 0, changed.output
    rows = json.loads(changed.output)["ledger"]["sources"]
    assert {n: (r["epoch_samples"], r["epoch_tokens"]) for n, r in rows.items()} == expected  # served stays served


def test_a_state_saved_before_copies_were_spread_is_refused_naming_the_rule(multi_dataset):
    old = iterators(multi_dataset, OLD, 1)
    run(old, 2)
    state = old[0].state_dict()
    del state["config"]["selection"]["copies"]  # what a state of the previous version recorded
    state["fingerprint"] = "0" * len(state["fingerprint"])
    with pytest.raises(TokenmillError, match=r"selection\.copies: None -> 'spread'"):
        iterators(multi_dataset, OLD, 1)[0].load_state_dict(state)
    with pytest.raises(TokenmillError, match="copies rule None"):  # its plan cannot be made again to re-plan from
        iterators(multi_dataset, RETIRE, 1)[0].load_state_dict(state, allow_mix_change=True)
