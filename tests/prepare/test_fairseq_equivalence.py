"""fairseq loads our prepare output and sees the same ids as fairseq-preprocess's output.

The reference pipeline is what users run today: spm_encode to piece text, then
``fairseq-preprocess`` with the same dictionaries. Needs the fairseq peer
(``bash scripts/setup_peers.sh fairseq``); run with ``python -m pytest -m fairseq``.
"""

from __future__ import annotations

import pytest

from tests.peers import run_peer
from tokenmill.prepare import build_config, prepare
from tokenmill.vocab.sentencepiece import SentencePieceEncoder

FAIRSEQ_SIDE = """
import subprocess
from fairseq.data import Dictionary
from fairseq.tasks.translation import load_langpair_dataset
p = PAYLOAD
subprocess.run([sys.executable, "-m", "fairseq_cli.preprocess", "--source-lang", "en", "--target-lang", "zh",
                "--trainpref", p["pieces"] + "/train", "--validpref", p["pieces"] + "/valid",
                "--srcdict", p["ours"] + "/dict.en.txt", "--tgtdict", p["ours"] + "/dict.zh.txt",
                "--destdir", p["theirs"], "--workers", "1", "--dataset-impl", "mmap"],
               check=True, capture_output=True)
src_dict = Dictionary.load(p["ours"] + "/dict.en.txt")
tgt_dict = Dictionary.load(p["ours"] + "/dict.zh.txt")
result = {}
for split in ("train", "valid"):
    loaded = {}
    for name in ("ours", "theirs"):
        ds = load_langpair_dataset(p[name], split, "en", src_dict, "zh", tgt_dict, combine=False,
                                   dataset_impl="mmap", upsample_primary=1, left_pad_source=True,
                                   left_pad_target=False, max_source_positions=1024, max_target_positions=1024)
        loaded[name] = [[ds[i]["source"].tolist(), ds[i]["target"].tolist()] for i in range(len(ds))]
    result[split] = loaded
print("RESULT:" + json.dumps(result))
"""


@pytest.mark.fairseq
def test_fairseq_reads_the_same_ids_as_fairseq_preprocess_produces(sample_settings, tmp_path):
    summary = prepare(build_config(sample_settings), progress=False)
    ours = summary.destdir
    encoder = SentencePieceEncoder(ours / "spm.model")
    pieces = tmp_path / "pieces"
    pieces.mkdir()
    for split in ("train", "valid"):
        for lang in ("en", "zh"):
            lines = (ours / ".work" / "clean" / f"{split}.{lang}").read_text(encoding="utf-8").split("\n")[:-1]
            encoded = encoder.processor.encode(lines, out_type=str)
            (pieces / f"{split}.{lang}").write_text("".join(" ".join(p) + "\n" for p in encoded), encoding="utf-8")
    theirs = tmp_path / "theirs"
    result = run_peer("fairseq", FAIRSEQ_SIDE, {"ours": str(ours), "theirs": str(theirs), "pieces": str(pieces)})
    for split in ("train", "valid"):
        assert len(result[split]["ours"]) == summary.splits[split]["langs"]["en"]["sentences"]
        assert result[split]["ours"] == result[split]["theirs"]
        for lang in ("en", "zh"):
            for suffix in (".bin", ".idx"):
                name = f"{split}.en-zh.{lang}{suffix}"
                assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name


FAIRSEQ_ALIGN = """
from fairseq.data import Dictionary
from fairseq.tasks.translation import load_langpair_dataset
p = PAYLOAD
ds = load_langpair_dataset(p["dir"], "train", "en", Dictionary.load(p["dir"] + "/dict.en.txt"), "de",
                           Dictionary.load(p["dir"] + "/dict.de.txt"), combine=False, dataset_impl="mmap",
                           upsample_primary=1, left_pad_source=True, left_pad_target=False,
                           max_source_positions=1024, max_target_positions=1024, load_alignments=True)
print("RESULT:" + json.dumps([ds[i]["alignment"].tolist() for i in range(len(ds))]))
"""


@pytest.mark.fairseq
def test_fairseq_loads_the_alignments_prepare_writes(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "train.en").write_text("a b c\nd e\nf\n", encoding="utf-8")
    (raw / "train.de").write_text("x y\nz w v\nu\n", encoding="utf-8")
    (raw / "train.align").write_text("0-0 1-1 2-1\n0-0 1-2\n0-0\n", encoding="utf-8")
    settings = {"source_lang": "en", "target_lang": "de", "trainpref": str(raw / "train"), "tokenizer": "none",
                "align_suffix": "align", "destdir": str(tmp_path / "bin")}
    prepare(build_config(settings), progress=False)
    seen = run_peer("fairseq", FAIRSEQ_ALIGN, {"dir": str(tmp_path / "bin")})
    assert seen == [[0, 0, 1, 1, 2, 1], [0, 0, 1, 2], [0, 0]]
