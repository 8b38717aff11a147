"""Blend members are keyed by fingerprint and content: two members over other tokens whose documents have the
same lengths (so the same fingerprint) keep their own counts in a mix change and in the ledger; the same
content listed twice is two members; states written before (by the previous release, which named members
by fingerprint alone, or by this wave before keys held the content) still resume, upgraded on load.

The earlier states are written by the earlier code itself (``git archive`` of :data:`PREVIOUS` and
:data:`WAVE`, :mod:`tests.loader.earlier_code`); those tests are skipped where the checkout lacks the commits."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import tokenmill
from tests.loader.earlier_code import PREVIOUS, WAVE, EarlierCode
from tests.loader.test_gpt_identity import CONFIG, gpt, write_store
from tokenmill.data.blend_members import lengths_part

SAVE = """
import json, sys
import tokenmill
args = json.loads(sys.argv[1])
config = tokenmill.GPTDatasetConfig(seq_length=16, seed=1)
members = [tokenmill.GPTDataset(tokenmill.open(p), config, cache=False) for p in args["prefixes"]]
blend = tokenmill.BlendedDataset(members, args["weights"], size=64, cache=False)
iterator = tokenmill.batches(blend, tokenmill.GPTBatchConfig(global_batch_size=8, micro_batch_size=2), world_size=2)
iterator.seek(1, args["step"])
print(json.dumps(iterator.state_dict()))
"""


def blend(members, weights=(0.5, 0.5)) -> tokenmill.BlendedDataset:
    return tokenmill.BlendedDataset(list(members), list(weights), size=64, cache=False)


def served(blend_data, its) -> list[tuple[str, int]]:
    """(member key, member sample) of every row the iterators served so far in pass 1, rank by rank."""
    keys = blend_data.mix["datasets"]
    rows = []
    for it in its:
        assert not it.segments, "counted from the start of the pass"
        positions = np.concatenate([np.asarray(it.indices_at(1, t)) for t in range(it.step)] or [np.zeros(0, int)])
        rows += [(keys[d], int(k)) for d, k in zip(blend_data.dataset_index[positions].tolist(),
                                                     blend_data.dataset_sample_index[positions].tolist(), strict=True)]
    return rows


def rest(blend_data, its) -> list[tuple[str, int]]:
    """(member key, member sample) of every row the resumed iterators serve in the rest of pass 1."""
    keys = blend_data.mix["datasets"]
    positions = np.concatenate([np.asarray(it.indices_at(1, t)) for it in its for t in range(it.step, it.num_steps())])
    return list(zip([keys[d] for d in blend_data.dataset_index[positions].tolist()],
                    blend_data.dataset_sample_index[positions].tolist(), strict=True))


def check_each_member_goes_on(before: list[tuple[str, int]], after: list[tuple[str, int]]) -> None:
    """No member sample twice; each member's samples over the change are its first ones, in order."""
    both = before + after
    assert len(set(both)) == len(both), "a member sample served twice"
    for key in {k for k, _ in both}:
        samples = sorted(s for k, s in both if k == key)
        assert samples == list(range(len(samples))), f"member {key[:20]} skipped samples"


def ledger_rows(iterator) -> dict[str, tuple[int, int]]:
    return {row["member"]: (row["epoch_samples"], row["total_samples"])
            for row in iterator.ledger()["sources"].values()}


def test_two_blend_members_with_equal_lengths_keep_separate_ledgers(tmp_path):
    web, other = gpt(write_store(tmp_path / "a" / "web", 0)), gpt(write_store(tmp_path / "b" / "web", 7))
    assert web.fingerprint() == other.fingerprint(), "the same lengths and settings"
    data = blend([web, other])
    first, second = data.mix["datasets"]
    assert first != second and lengths_part(first) == lengths_part(second) == web.fingerprint()
    its = [tokenmill.batches(data, CONFIG, rank=r, world_size=2) for r in range(2)]
    for it in its:
        it.seek(1, 4)  # two global batches
    before = served(data, its)
    counts = Counter(k for k, _ in before)
    assert ledger_rows(its[0]) == {first: (counts[first],) * 2, second: (counts[second],) * 2}
    assert counts[first] and counts[second]

    state = json.loads(json.dumps(its[0].state_dict()))
    assert state["config"]["selection"]["datasets"] == [first, second]
    reweighted = blend([web, other], (0.25, 0.75))
    resumed = tokenmill.batches(reweighted, CONFIG, world_size=1)
    resumed.load_state_dict(state, allow_mix_change=True)
    check_each_member_goes_on(before, rest(reweighted, [resumed]))


def test_the_same_content_listed_twice_is_two_members(tmp_path):
    """Each listing draws its own samples (its own greedy counter), so each keeps its own counts and goes
    on from its own first unserved sample; the ledger names them by their place in the blend."""
    web = gpt(write_store(tmp_path / "a" / "web", 0))
    data = blend([web, web], (0.5, 0.5))
    first, second = data.mix["datasets"]
    assert second == f"{first}#2"
    its = [tokenmill.batches(data, CONFIG, rank=r, world_size=2) for r in range(2)]
    for it in its:
        it.seek(1, 4)
    before = served(data, its)
    names = {row["member"]: name for name, row in its[0].ledger()["sources"].items()}
    assert names[first].endswith("(member 1)") and names[second].endswith("(member 2)")
    state = json.loads(json.dumps(its[0].state_dict()))
    alone = blend([web], (1.0,))  # the first listing goes on, the second is retired
    assert alone.mix["datasets"] == [first]
    resumed = tokenmill.batches(alone, CONFIG, world_size=2)
    resumed.load_state_dict(state, allow_mix_change=True)
    other_rank = tokenmill.batches(alone, CONFIG, rank=1, world_size=2)
    other_rank.load_state_dict(state, allow_mix_change=True)
    after = rest(alone, [resumed, other_rank])
    assert {k for k, _ in after} == {first}
    check_each_member_goes_on([x for x in before if x[0] == first], after)
    rows = ledger_rows(resumed)
    assert rows[second] == (Counter(k for k, _ in before)[second],) * 2, "the retired listing keeps its counts"


# ---------------------------------------------------------------- states written by earlier code


@pytest.fixture(scope="module")
def earlier(tmp_path_factory) -> EarlierCode:
    return EarlierCode(tmp_path_factory.mktemp("earlier"))


def saved_by(earlier: EarlierCode, commit: str, prefixes: list[Path], weights: list[float], step: int) -> dict:
    return earlier.state(commit, SAVE, {"prefixes": [str(p) for p in prefixes], "weights": weights, "step": step})


@pytest.fixture
def stores(tmp_path) -> dict[str, Path]:
    return {"web": write_store(tmp_path / "a" / "web", 0), "other": write_store(tmp_path / "b" / "web", 7),
            "code": write_store(tmp_path / "a" / "code", 50, 130),
            "books": write_store(tmp_path / "a" / "books", 90, 140),
            "swapped": write_store(tmp_path / "b" / "code", 60, 130)}


def resumed_at(members, state, world=2, **kwargs):
    its = [tokenmill.batches(blend(members), CONFIG, rank=r, world_size=world) for r in range(world)]
    for it in its:
        it.load_state_dict(state, **kwargs)
    return its


def test_a_previous_release_state_of_equal_length_members_resumes_and_counts_them_apart(earlier, stores):
    old = saved_by(earlier, PREVIOUS, [stores["web"], stores["other"]], [0.5, 0.5], 4)
    assert "contents" not in old and len(set(old["config"]["selection"]["datasets"])) == 1, "one name for both"
    web, other = gpt(stores["web"]), gpt(stores["other"])
    now = resumed_at([web, other], old)
    again = resumed_at([web, other], json.loads(json.dumps(now[0].state_dict())))
    for a, b in zip(now, again, strict=True):  # the same position and plans as a state of this release
        assert (a.epoch, a.step) == (b.epoch, b.step) == (1, 4)
        assert [a.indices_at(1, t).tolist() for t in range(16)] == [b.indices_at(1, t).tolist() for t in range(16)]
    data = now[0].dataset
    counts = Counter(k for k, _ in served(data, now))
    assert ledger_rows(now[0]) == {k: (counts[k],) * 2 for k in data.mix["datasets"]} and len(counts) == 2
    changed = resumed_at([web, other], old, world=1)  # (the same blend: an elastic resume)
    assert changed[0].segments == [(2, 4)]


def test_a_previous_release_state_resumes_on_the_lengths_also_with_a_mix_change(earlier, stores):
    old = saved_by(earlier, PREVIOUS, [stores["web"], stores["code"]], [0.5, 0.5], 4)
    web, code, books = gpt(stores["web"]), gpt(stores["code"]), gpt(stores["books"])
    swapped = gpt(stores["swapped"])
    assert resumed_at([web, swapped], old)[0].step == 4, "no contents recorded: checked on the lengths, as before"
    changed = resumed_at([code, books], old, allow_mix_change=True)  # web retired, books added
    rows = ledger_rows(changed[0])
    before = Counter(lengths_part(k) for k, _ in served(blend([web, code]), resumed_at([web, code], old)))
    by_lengths = {lengths_part(k): v for k, v in rows.items()}
    assert by_lengths[web.fingerprint()] == (before[web.fingerprint()],) * 2  # retired, named by its fingerprint
    assert by_lengths[code.fingerprint()] == (before[code.fingerprint()],) * 2
    assert by_lengths[books.fingerprint()] == (0, 0)


def test_a_state_with_contents_by_fingerprint_refuses_a_member_over_other_tokens(earlier, stores, tmp_path):
    old = saved_by(earlier, WAVE, [stores["web"], stores["code"]], [0.5, 0.5], 4)
    assert set(old["contents"]) == set(old["config"]["selection"]["datasets"]), "contents by member fingerprint"
    web, code, swapped = gpt(stores["web"]), gpt(stores["code"]), gpt(stores["swapped"])
    with pytest.raises(tokenmill.TokenmillError, match=r"blend member 2 .*b/code\) has the same lengths but other"):
        resumed_at([web, swapped], old)
    assert [it.step for it in resumed_at([web, code], old)] == [4, 4]
    changed = resumed_at([web, swapped], old, allow_mix_change=True)  # another corpus on purpose
    rows = ledger_rows(changed[0])
    assert rows[blend([web, swapped]).mix["datasets"][1]] == (0, 0) and len(rows) == 3
