"""Translation-pair and multilingual states are checked against their stores' content, not only their
lengths: a state records each side's content identity (the manifest's checksums, or the files' own), and a
resume onto a folder whose tokens changed but whose lengths did not is refused naming the changed store,
also elastically and with a mix change. A state of the previous release (written by its code) has none and
resumes as it did, checked on the lengths."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.batching.corpus import make_pair_dir, write_side
from tests.loader.earlier_code import PREVIOUS, EarlierCode
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.sampled import SampledPlanner
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.data.pairs import PairDataset
from tokenmill.data.sampling import SamplingConfig
from tokenmill.errors import TokenmillError
from tokenmill.loader import BatchIterator
from tokenmill.store import IndexedDataset
from tokenmill.store.identity import content_id

CONFIG = BatchConfig(max_tokens=160, required_batch_size_multiple=1, seed=3)
SAVE = """
import json, sys
from tokenmill.batching.config import BatchConfig
from tokenmill.data.pairs import PairDataset
from tokenmill.loader import BatchIterator
args = json.loads(sys.argv[1])
config = BatchConfig(max_tokens=160, required_batch_size_multiple=1, seed=3)
iterator = BatchIterator(PairDataset.from_dir(args["folder"]), config, world_size=2, collate=None, cache=False)
iterator.seek(1, args["step"])
print(json.dumps(iterator.state_dict()))
"""


def with_other_tokens(prefix: Path, seed: int) -> None:
    """Rewrite the store at ``prefix`` with other token ids, every sentence as long as before."""
    lengths = np.array(IndexedDataset(prefix).sizes, dtype=np.int64) - 1  # write_side appends </s>
    write_side(prefix, lengths, seed)


@pytest.fixture
def folders(tmp_path) -> dict[str, Path]:
    """``first``; ``same``, a copy of it elsewhere; ``other``, a copy whose German side has other tokens."""
    first = make_pair_dir(tmp_path / "first", 101, seed=5)
    same = Path(shutil.copytree(first, tmp_path / "same"))
    other = Path(shutil.copytree(first, tmp_path / "other"))
    with_other_tokens(other / "train.en-de.de", 77)
    return {"first": first, "same": same, "other": other}


def ranks(folder: Path, world: int) -> list[BatchIterator]:
    data = PairDataset.from_dir(folder)
    return [BatchIterator(data, CONFIG, rank=r, world_size=world, collate=None, cache=False) for r in range(world)]


def saved(folder: Path, step: int = 3) -> dict:
    its = ranks(folder, 2)
    for it in its:
        it.seek(1, step)
    return json.loads(json.dumps(its[0].state_dict()))


def rest_of_epoch(its: list[BatchIterator]) -> list[list[int]]:
    return [it.indices_at(1, t).tolist() for it in its for t in range(it.step, it.num_steps())]


def test_a_pair_state_refuses_a_folder_whose_tokens_changed(folders):
    state = saved(folders["first"])
    assert state["contents"] == {side: content_id(folders["first"] / f"train.en-de.{lang}")
                                 for side, lang in (("source", "en"), ("target", "de"))}
    for world in (2, 3):  # also at another world size (an elastic resume)
        with pytest.raises(TokenmillError) as refused:
            ranks(folders["other"], world)[0].load_state_dict(state)
        message = str(refused.value)
        assert message.startswith("cannot resume: the data differ from the checkpoint's")
        assert "same lengths but other tokens in " + str(folders["other"] / "train.en-de.de") in message
        assert str(folders["other"] / "train.en-de.en") not in message, "the unchanged source side is not named"
        assert message.endswith("restore the original data/settings, or start the data iterator afresh (without "
                                "its saved state)")
        same, first = ranks(folders["same"], world), ranks(folders["first"], world)
        for it in same + first:
            it.load_state_dict(state)
        assert rest_of_epoch(same) == rest_of_epoch(first), "the same tokens elsewhere: the same data"


def test_the_content_comes_from_the_manifest_when_it_lists_the_stores(folders):
    """A manifest that lists checksums is read, not the files: a re-prepared folder's new manifest names
    the new content (a stale manifest is what ``tokenmill verify`` catches)."""
    other = folders["other"]
    listed = {f"train.en-de.{lang}{suffix}": {"xxh3_128": f"{lang}{suffix}-sum"} for lang in ("en", "de")
              for suffix in (".bin", ".idx")}
    manifest = json.loads((other / "manifest.json").read_text(encoding="utf-8"))
    (other / "manifest.json").write_text(json.dumps({**manifest, "files": listed}), encoding="utf-8")
    assert PairDataset.from_dir(other).content() == {"source": "en.bin-sum:en.idx-sum",
                                                     "target": "de.bin-sum:de.idx-sum"}


def test_a_previous_release_pair_state_is_this_state_less_contents_and_resumes_on_the_lengths(folders, tmp_path):
    old = EarlierCode(tmp_path / "earlier").state(PREVIOUS, SAVE, {"folder": str(folders["first"]), "step": 3})
    state = saved(folders["first"])
    assert old == {k: v for k, v in state.items() if k != "contents"}, "the new field is the only difference"
    for world in (2, 3):
        resumed, first = ranks(folders["other"], world), ranks(folders["first"], world)
        for it in resumed + first:
            it.load_state_dict(old)  # no contents: checked on the lengths, as when it was saved
        assert rest_of_epoch(resumed) == rest_of_epoch(first)


OLD = SamplingConfig(temperature=5.0, seed=3)
NEW = SamplingConfig(weights={"eng_Latn-tur_Latn": 1.0, "eng_Latn-hin_Deva": 2.0, "fra_Latn-eng_Latn": 0.0}, seed=4)
BATCHES = BatchConfig(max_tokens=240, required_batch_size_multiple=2)


def sampled(data: MultiPairDataset, sampling: SamplingConfig, world: int) -> list[BatchIterator]:
    planner = SampledPlanner(data, BATCHES, sampling, world_size=world, cache=False)
    return [BatchIterator(data, planner=planner, collate=None, rank=r, world_size=world) for r in range(world)]


def test_a_multilingual_state_refuses_a_shard_whose_tokens_changed_also_with_a_mix_change(multi_data_bin, tmp_path):
    same = Path(shutil.copytree(multi_data_bin, tmp_path / "same"))
    other = Path(shutil.copytree(multi_data_bin, tmp_path / "other"))
    changed = other / "shard001" / "train.eng_Latn-hin_Deva.hin_Deva"
    with_other_tokens(changed, 99)
    its = sampled(MultiPairDataset.from_dir(multi_data_bin), OLD, 2)
    for it in its:
        it.seek(1, 4)
    state = json.loads(json.dumps(its[0].state_dict()))
    assert "eng_Latn-hin_Deva/1/target" in state["contents"] and len(state["contents"]) == 2 * 6  # 6 shards
    for sampling, world, flag in ((OLD, 2, False), (OLD, 3, False), (NEW, 3, True)):
        with pytest.raises(TokenmillError, match=f"same lengths but other tokens in {changed} "):
            sampled(MultiPairDataset.from_dir(other), sampling, world)[0].load_state_dict(state, allow_mix_change=flag)
        resumed = sampled(MultiPairDataset.from_dir(same), sampling, world)
        for it in resumed:
            it.load_state_dict(state, allow_mix_change=flag)
        assert len({it.num_steps() - it.step for it in resumed}) == 1, "every rank runs the same steps"
    assert resumed[0].segments and resumed[0].segments[-1][2] is not None, "the mix change is recorded"
