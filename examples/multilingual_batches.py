"""Batches over the 5-direction data_bin: the sampled mix, language tags, and an exact resume.

Run after `bash examples/multilingual.sh` (or any `prepare --directions` output):
    python examples/multilingual_batches.py [DATA_BIN]   (default runs/multilingual-bin)
"""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np

from tokenmill.batching import BatchConfig
from tokenmill.data import SamplingConfig
from tokenmill.loader import multilingual_batches
from tokenmill.vocab import Dictionary

data_bin = sys.argv[1] if len(sys.argv) > 1 else "runs/multilingual-bin"
dictionary = Dictionary.load(f"{data_bin}/dict.txt")


def make(rank: int = 0):
    return multilingual_batches(data_bin, BatchConfig(max_tokens=2048, seed=7), SamplingConfig(temperature=5),
                                rank=rank, world_size=2, infinite=True)


batches = make()
names = batches.dataset.directions
print(batches.planner.describe_epoch(1))
stream = iter(batches)
print("\nfirst 6 batches (batched by length across the mix):")
for _ in range(6):
    batch = next(stream)
    source, target = batch["net_input"]["src_tokens"][0], batch["target"][0]
    mix = dict(Counter(names[d] for d in batch["direction"]))
    print(f"  {len(batch['id'])} pairs {mix}")
    print("    source row 0:", dictionary.decode(source[source != dictionary.pad_index])[:100])
    print("    target row 0:", dictionary.decode(target[target != dictionary.pad_index])[:100])

state = batches.state_dict()           # what a checkpoint stores: a few hundred bytes of JSON
expected = [next(stream)["id"] for _ in range(3)]
resumed = make()
resumed.load_state_dict(state)         # O(1): no replay of the epoch
resumed_stream = iter(resumed)
again = [next(resumed_stream)["id"] for _ in range(3)]
same = all(np.array_equal(a, b) for a, b in zip(expected, again, strict=True))
print("\nresumed stream equals the uninterrupted one:", same)
print("steps per rank:", [make(rank).num_steps(1) for rank in range(2)])
