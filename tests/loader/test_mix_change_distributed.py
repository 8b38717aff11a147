"""A real torch.distributed job (gloo on 127.0.0.1) changes the data mix and the world size at one resume:
two ranks train a temperature-sampled mix, checkpoint, and three ranks resume with one direction retired
and the others re-weighted. No pair is served more often than the new mix draws it, the rest is exactly
the new draw less what was served, the retired direction stops, and every rank runs the same steps."""

from __future__ import annotations

import json
import sys
from collections import Counter
from functools import partial

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tests.data.multi_corpus import make_data_bin  # noqa: E402
from tests.loader.distributed_job import run_job  # noqa: E402
from tokenmill.batching.config import BatchConfig  # noqa: E402
from tokenmill.batching.sampled import SampledMix  # noqa: E402
from tokenmill.data.multi_pairs import MultiPairDataset  # noqa: E402
from tokenmill.data.sampling import SamplingConfig  # noqa: E402
from tokenmill.loader.multilingual import multilingual_batches  # noqa: E402
from tokenmill.loader.torch import StatefulLoader, rank_and_world  # noqa: E402

CONFIG = BatchConfig(max_tokens=240, required_batch_size_multiple=2, seed=3)
OLD = SamplingConfig(temperature=5.0, seed=3)  # upsamples fra-eng
FRA = "fra_Latn-eng_Latn"
NEW = SamplingConfig(weights={"eng_Latn-tur_Latn": 1.0, "eng_Latn-hin_Deva": 2.0, FRA: 0.0}, seed=4)
STEPS_BEFORE = 3


def mix_loader(data: str, sampling: dict) -> StatefulLoader:
    rank, world = rank_and_world(None, None)  # from torch.distributed
    batches = multilingual_batches(data, CONFIG, SamplingConfig.from_dict(sampling), rank=rank, world_size=world,
                                   collate=None, cache=False)
    return StatefulLoader(batches)


def sample_ids(batch) -> list[int]:
    return [int(i) for i in batch]


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="gloo over TCP on loopback is set up for Linux here")
def test_two_ranks_checkpoint_and_three_resume_under_another_mix(tmp_path):
    data = make_data_bin(tmp_path / "data_bin")
    dataset = MultiPairDataset.from_dir(data)
    before = run_job(2, tmp_path / "w2", partial(mix_loader, str(data), OLD.to_dict()), sample_ids,
                     stop_after=STEPS_BEFORE)
    assert [(r["rank"], r["world"], len(r["served"])) for r in before] == [(0, 2, STEPS_BEFORE), (1, 2, STEPS_BEFORE)]
    state = tmp_path / "state.json"
    state.write_text(json.dumps(before[0]["state"]))
    after = run_job(3, tmp_path / "w3", partial(mix_loader, str(data), NEW.to_dict()), sample_ids, resume=state,
                    allow_mix_change=True)
    steps = {(r["min"], r["max"], len(r["served"])) for r in after}
    assert len(steps) == 1 and len(set(steps.pop())) == 1, "equal steps on every rank after the change"
    assert all(r["world"] == 3 for r in after)
    served = Counter(i for r in before for batch in r["served"] for i in batch)
    rest = Counter(i for r in after for batch in r["served"] for i in batch)
    drawn_new = Counter(SampledMix(dataset, NEW).sample(1).ids.tolist())
    assert served and rest
    assert rest == drawn_new - served, "the rest is the new mix's draw less what was served"
    drawn_old = Counter(SampledMix(dataset, OLD).sample(1).ids.tolist())
    both = served + rest
    assert all(n <= max(drawn_old[i], drawn_new[i]) for i, n in both.items()), "a pair served more than drawn"
    fra = dataset.directions.index(FRA)
    assert not np.any(dataset.direction_of(np.array(list(rest))) == fra), "the retired direction stopped"
    segments = after[0]["state"]["segments"]
    assert after[0]["state"]["epoch"] == 2 and segments == [], "the changed epoch ran to its end"
    assert after[0]["state"]["config"]["selection"]["sampling"]["weights"][FRA] == 0.0
