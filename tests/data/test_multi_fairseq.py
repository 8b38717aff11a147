"""fairseq's own multilingual task reads what ``tokenmill prepare --directions`` writes, and sees what we serve.

One small three-direction corpus is prepared into two shards; fairseq's
``translation_multi_simple_epoch`` task (run in its venv by tests/data/fairseq_multi_oracle.py) is
set up on ``shard000:shard001`` with ``--langs`` and each ``--encoder-langtok`` /
``--decoder-langtok`` setting, and loads the ``valid`` split and ``train`` for epochs 1 and 2. Every
item, sampled item and collated batch fairseq produces is compared with
:class:`~tokenmill.data.MultiPairDataset` under the matching :class:`~tokenmill.data.LangTokConfig`.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.peers import require_peer
from tests.prepare.test_multilingual import settings, write_direction
from tokenmill.batching.collate import collate_fairseq
from tokenmill.data import LangTokConfig, MultiPairDataset
from tokenmill.prepare import build_config, prepare
from tokenmill.vocab import Dictionary

pytestmark = pytest.mark.fairseq

ORACLE = Path(__file__).with_name("fairseq_multi_oracle.py")
DIRECTIONS = ["eng_Latn-deu_Latn", "eng_Latn-rus_Cyrl", "eng_Latn-zho_Hans"]
LANGS = ["eng_Latn", "deu_Latn", "rus_Cyrl", "zho_Hans"]
TRAIN_LINES = {"deu_Latn": 40, "rus_Cyrl": 31, "zho_Hans": 20}  # 31: shards of unequal size
VALID_BATCH = [0, 6, 12, 3, 9, 14, 1]  # ConcatDataset ids over all three directions
RUNS = [  # fairseq flags -> the LangTokConfig that should serve the same tokens
    {"name": "nllb", "encoder_langtok": "src", "decoder_langtok": True, "train_epochs": [1, 2], "sampled": 8},
    {"name": "tgt_tag", "encoder_langtok": "tgt", "decoder_langtok": True},
    {"name": "encoder_only", "encoder_langtok": "src", "decoder_langtok": False},
    {"name": "none", "encoder_langtok": None, "decoder_langtok": False},
    {"name": "replacing", "encoder_langtok": "src", "decoder_langtok": True, "replacing": True},
]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The prepared data_bin and fairseq's view of it (one fairseq process for all runs)."""
    python = require_peer("fairseq")
    tmp = tmp_path_factory.mktemp("multi_fairseq")
    raw = tmp / "raw"
    raw.mkdir()
    for seed, (tgt, n) in enumerate(TRAIN_LINES.items()):
        write_direction(raw, tgt, n, seed)
    data_bin = prepare(build_config(settings(raw, tmp, DIRECTIONS)), progress=False).destdir
    request = {
        "data": f"{data_bin / 'shard000'}:{data_bin / 'shard001'}",
        "lang_pairs": DIRECTIONS,
        "langs": LANGS,
        "runs": [{"train_epochs": [], "sampled": 0, "replacing": False, "batch": VALID_BATCH, **run} for run in RUNS],
    }
    (tmp / "request.json").write_text(json.dumps(request))
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.run([python, str(ORACLE), str(tmp)], capture_output=True, text=True, timeout=300, env=env)
    if proc.returncode != 0:
        raise AssertionError(f"fairseq oracle failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return data_bin, json.loads((tmp / "result.json").read_text())


def langtok(run: dict) -> LangTokConfig:
    return LangTokConfig(encoder_langtok=run["encoder_langtok"], decoder_langtok=run["decoder_langtok"])


def ours(data_bin: Path, split: str, config: LangTokConfig) -> MultiPairDataset:
    return MultiPairDataset.from_dir(data_bin, split, DIRECTIONS, langtok=config)


def pair(dataset: MultiPairDataset, global_id: int) -> dict:
    item = dataset[global_id]
    return {"source": item["source"].tolist(), "target": item["target"].tolist()}


def same_batch(theirs: dict, mine: dict, dataset: MultiPairDataset) -> None:
    """fairseq's collated batch equals collate_fairseq's; fairseq's ids are local to each direction's dataset."""
    _, local = dataset.locate(mine["id"])
    assert theirs["id"] == local.tolist()
    net = mine["net_input"]
    assert theirs["src_tokens"] == net["src_tokens"].tolist()
    assert theirs["src_lengths"] == net["src_lengths"].tolist()
    assert theirs["prev_output_tokens"] == net["prev_output_tokens"].tolist()
    assert theirs["target"] == mine["target"].tolist()
    assert theirs["ntokens"] == mine["ntokens"]


def test_fairseq_finds_our_language_tokens_and_adds_nothing(world):
    data_bin, result = world
    ours_dict = Dictionary.load(data_bin / "dict.txt")
    manifest = json.loads((data_bin / "manifest.json").read_text(encoding="utf-8"))
    for run in result.values():
        # augment_dictionary's add_symbol("__lang__") finds every tag already there: same symbols, same ids
        assert run["dict"]["symbols"] == ours_dict.symbols
        assert run["dict"]["langtok"] == manifest["vocab"]["lang_tokens"]
        assert run["dict"]["langtok"] == {lang: ours_dict.index(f"__{lang}__") for lang in LANGS}
        assert run["dict"]["special"] == [0, 1, 2, 3]  # <s> <pad> </s> <unk>


@pytest.mark.parametrize("name", [run["name"] for run in RUNS if not run.get("replacing")])
def test_every_valid_item_is_what_we_serve(world, name):
    data_bin, result = world
    run = next(r for r in RUNS if r["name"] == name)
    theirs = result[name]
    mine = ours(data_bin, "valid", langtok(run))
    assert mine.directions == DIRECTIONS
    # valid reads shard000 only on both sides, one part per direction, in --lang-pairs order: fairseq's
    # ConcatDataset index is our global id
    assert theirs["valid_sizes"] == [len(part) for part in mine.parts]
    assert len(theirs["valid"]) == len(mine) == 15
    starts = np.cumsum([0, *theirs["valid_sizes"]])
    for concat_id, item in enumerate(theirs["valid"]):
        assert item["id"] == concat_id - starts[mine.direction_of([concat_id])[0]]  # fairseq's ids are local
        assert {"source": item["source"], "target": item["target"]} == pair(mine, concat_id), (name, concat_id)
    tag = json.loads((data_bin / "manifest.json").read_text(encoding="utf-8"))["vocab"]["lang_tokens"]
    first = theirs["valid"][0]  # eng_Latn-deu_Latn
    expected_src = {"src": [tag["eng_Latn"]], "tgt": [tag["deu_Latn"]], None: []}[run["encoder_langtok"]]
    assert first["source"][: len(expected_src)] == expected_src and first["source"][-1] == 2
    assert (first["target"][0] == tag["deu_Latn"]) == run["decoder_langtok"] and first["target"][-1] == 2
    same_batch(theirs["valid_batch"], collate_fairseq(mine, np.array(VALID_BATCH)), mine)


def test_each_training_epoch_reads_the_same_shard_and_samples_what_we_serve(world):
    data_bin, result = world
    run = RUNS[0]
    mine = ours(data_bin, "train", langtok(run))
    assert [len(shards) for shards in mine.shards] == [2, 2, 2]
    for epoch in run["train_epochs"]:
        theirs = result["nllb"]["train"][str(epoch)]
        assert theirs["keys"] == [f"main:{name}" for name in mine.directions]
        active = mine.active_parts(epoch)  # epoch 1: shard000, epoch 2: shard001, as fairseq's get_shard_id
        assert mine.part_shard[active].tolist() == [epoch - 1] * 3
        for d, items in enumerate(theirs["items"]):
            part = int(active[d])
            assert len(items) == len(mine.parts[part])
            for local, item in enumerate(items):
                assert {"source": item["source"], "target": item["target"]} == pair(mine, mine.offsets[part] + local)
        # SampledMultiDataset[i] -> (direction, item of that direction's loaded shard)
        globals_ = [int(mine.offsets[active[d]]) + item["id"] for d, item in theirs["sampled"]]
        for (d, item), g in zip(theirs["sampled"], globals_, strict=True):
            assert mine.direction_of([g])[0] == d
            assert {"source": item["source"], "target": item["target"]} == pair(mine, g)
        same_batch(theirs["batch"], collate_fairseq(mine, np.array(globals_)), mine)
    sizes = {name: [len(p) for p in shards] for name, shards in zip(mine.directions, mine.shards, strict=True)}
    assert sizes["eng_Latn-rus_Cyrl"] in ([15, 16], [16, 15]) and sum(sizes["eng_Latn-rus_Cyrl"]) == 31


def test_lang_tok_replacing_bos_eos_is_a_collate_time_rewrite_of_the_untagged_batch(world):
    """``--lang-tok-replacing-bos-eos`` (which LangTokConfig does not offer) prepends nothing: fairseq's
    TransformEosLangPairDataset overwrites, at collate time, the source's final ``</s>`` with the
    encoder tag and the decoder input's leading ``</s>`` with the decoder tag; the target keeps no
    tag. Stated exactly against our untagged batch of the same pairs."""
    data_bin, result = world
    theirs = result["replacing"]
    plain = ours(data_bin, "valid", LangTokConfig(encoder_langtok=None, decoder_langtok=False))
    tag = json.loads((data_bin / "manifest.json").read_text(encoding="utf-8"))["vocab"]["lang_tokens"]
    assert theirs["valid_sizes"] == [len(part) for part in plain.parts]
    for d, name in enumerate(DIRECTIONS):
        src, tgt = name.split("-")
        ids = np.arange(plain.offsets[d], plain.offsets[d + 1])
        mine = collate_fairseq(plain, ids)
        src_tokens = mine["net_input"]["src_tokens"].copy()
        assert (src_tokens[:, -1] == 2).all()  # left-padded: every row's </s> is in the last column
        src_tokens[:, -1] = tag[src]
        prev = mine["net_input"]["prev_output_tokens"].copy()
        assert (prev[:, 0] == 2).all()
        prev[:, 0] = tag[tgt]
        got = theirs["valid_batches"][d]
        _, local = plain.locate(mine["id"])
        assert got["id"] == local.tolist()
        assert got["src_tokens"] == src_tokens.tolist()
        assert got["src_lengths"] == mine["net_input"]["src_lengths"].tolist()
        assert got["prev_output_tokens"] == prev.tolist()
        assert got["target"] == mine["target"].tolist()
