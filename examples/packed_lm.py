"""Packed LM rows from a small document corpus: prepare (blank-line documents) -> GPTDataset -> print.

Trains nothing: it makes a plain-text corpus of blank-line separated documents from the bundled
sample, prepares it in the Megatron layout with an end-of-document token of its own, and prints
the first packed rows with their document boundaries (what flash-attention's varlen kernels take).
Run: python examples/packed_lm.py [OUT]   (default runs/packed-lm)
"""

from __future__ import annotations

import sys
from pathlib import Path

from tokenmill.data import GPTDataset, GPTDatasetConfig
from tokenmill.prepare import build_config, prepare
from tokenmill.store import IndexedDataset
from tokenmill.vocab import Dictionary
from tokenmill.vocab.sentencepiece import SentencePieceEncoder

out = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/packed-lm")
out.mkdir(parents=True, exist_ok=True)
lines = (Path(__file__).parent / "sample" / "train.en").read_text(encoding="utf-8").splitlines()
documents = ["\n".join(lines[i : i + 1 + k % 3]) for k, i in enumerate(range(0, 120, 3))]  # 1-3 sentences each
(out / "books.en").write_text("\n\n".join(documents) + "\n", encoding="utf-8")

summary = prepare(build_config({
    "source_lang": "en", "trainpref": str(out / "books"), "destdir": str(out / "bin"), "layout": "megatron",
    "documents": "blank-line", "append_eod": True, "eod_symbol": "<eod>", "vocab_size": 200, "workers": 1,
}), progress=False)
dictionary = Dictionary.load(summary.destdir / "dict.txt")
spm = SentencePieceEncoder(summary.destdir / "spm.model")
eod = dictionary.index("<eod>")
store = IndexedDataset(summary.destdir / "train")
print(f"{len(store)} documents, {int(store.sizes.sum())} tokens, end-of-document id {eod}")

config = GPTDatasetConfig(seq_length=32, num_epochs=1, eod_id=eod, eod_mask_loss=True, reset_position_ids=True)
samples = GPTDataset(store, config, cache=out / "index-cache")
batch = samples.get_batch(range(3))
for row in range(3):
    tokens = batch["tokens"][row]
    pieces = [dictionary.symbols[i] for i in tokens]
    text = " | ".join(spm.processor.decode_pieces(p.split()) for p in " ".join(pieces).split("<eod>"))
    print(f"row {row}: {text}")
    print(f"  position_ids {batch['position_ids'][row].tolist()}")
    print(f"  loss_mask    {batch['loss_mask'][row].astype(int).tolist()}")
print(f"cu_seqlens of the 3 rows flattened: {batch['cu_seqlens'].tolist()}")
