"""lowpad mode: less padding than fairseq's and OpenNMT-tf's batching, and still random batches.

The figures at 1M and 20M pairs are in benchmarks/bench_batching.py; here a 200k-pair corpus.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.batching.corpus import make_pair_dir, pair_lengths
from tokenmill.batching import lowpad
from tokenmill.batching.config import LOWPAD_CUT, BatchConfig
from tokenmill.batching.costs import Sizes
from tokenmill.batching.plan import Planner
from tokenmill.data.pairs import PairDataset
from tokenmill.errors import TokenmillError
from tokenmill.loader import BatchIterator


@pytest.fixture(scope="module")
def corpus() -> Sizes:
    src, tgt = pair_lengths(200_000, 0, mean=3.0, spread=0.6, top=250)
    return Sizes((src + 1).astype(np.int32), (tgt + 1).astype(np.int32))


@pytest.mark.parametrize("max_tokens", [4096, 16384])
def test_padding_is_about_half_of_fairseq_and_below_opennmt(corpus, max_tokens):
    padding = {
        mode: Planner(
            corpus, BatchConfig(mode=mode, max_tokens=max_tokens, required_batch_size_multiple=8), data_fingerprint="c"
        )
        .plan(1)
        .stats.padding_fraction
        for mode in ("lowpad", "fairseq", "opennmt")
    }
    assert padding["lowpad"] <= 0.55 * padding["fairseq"]
    assert padding["lowpad"] < padding["opennmt"]


def test_batches_change_between_epochs_but_lengths_stay_tight(corpus):
    config = BatchConfig(max_tokens=4096)
    one, two = lowpad.cut(corpus, config, epoch=1), lowpad.cut(corpus, config, epoch=2)
    first = {tuple(sorted(b.tolist())) for b in np.split(one.order, one.ends[:-1])}
    second = {tuple(sorted(b.tolist())) for b in np.split(two.order, two.ends[:-1])}
    # membership is redrawn each epoch; only batches of rare lengths (a pair or two per length cell,
    # in the long tail) can come out the same
    assert len(first & second) < 0.1 * len(first)
    spans = [np.ptp(corpus.tgt[b]) for b in np.split(one.order, one.ends[:-1])]
    assert np.median(spans) <= 2


def test_budget_and_multiple_hold(corpus):
    cut = lowpad.cut(corpus, BatchConfig(max_tokens=4096, required_batch_size_multiple=8, pad_to_multiple=8), epoch=1)
    for batch in np.split(cut.order, cut.ends[:-1]):
        longest = max(corpus.src[batch].max(), corpus.tgt[batch].max())
        assert len(batch) * (-(-longest // 8) * 8) <= 4096
        assert len(batch) < 8 or len(batch) % 8 == 0


def test_a_state_of_the_old_cut_rule_is_refused_naming_it(tmp_path):
    """lowpad's cut changed for the same settings (LOWPAD_CUT 2): a state saved under the old rule (no
    ``lowpad_cut`` in its settings) must not resume onto the new plan silently."""
    assert BatchConfig().plan_identity()["lowpad_cut"] == LOWPAD_CUT == 2
    assert "lowpad_cut" not in BatchConfig(mode="fairseq").plan_identity()  # the peer modes cut as before
    dataset = PairDataset.from_dir(make_pair_dir(tmp_path / "data", 60, seed=2))
    config = BatchConfig(max_tokens=160)
    saved = BatchIterator(dataset, config, collate=None, cache=False)
    next(iter(saved))
    state = saved.state_dict()
    BatchIterator(dataset, config, collate=None, cache=False).load_state_dict(state)  # same rule: resumes
    del state["config"]["lowpad_cut"]
    with pytest.raises(TokenmillError, match=r"lowpad_cut: None -> 2"):
        BatchIterator(dataset, config, collate=None, cache=False).load_state_dict(state)
