"""Many directions in one run: shared SentencePiece + dictionary with language tokens, NLLB layout."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tokenmill.errors import ConfigError, TokenmillError
from tokenmill.prepare import build_config, prepare
from tokenmill.prepare.multilingual import temperature_quotas
from tokenmill.store import IndexedDataset
from tokenmill.store.manifest import verify_directory
from tokenmill.vocab import Dictionary
from tokenmill.vocab.sentencepiece import SentencePieceEncoder

WORDS = {
    "eng_Latn": "the cat sees a red house near water every day".split(),
    "deu_Latn": "die Katze sieht ein rotes Haus nahe Wasser jeden Tag".split(),
    "rus_Cyrl": "кошка видит красный дом у воды каждый день".split(),
    "zho_Hans": list("猫每天看见水边的红房子"),
    "ell_Grek": "η γάτα βλέπει ένα κόκκινο σπίτι κάθε μέρα".split(),
}


def write_direction(raw, tgt: str, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for split, count in (("train", n), ("valid", 5)):
        rows = [rng.integers(0, 8, size=int(rng.integers(2, 7))) for _ in range(count)]
        for lang in ("eng_Latn", tgt):
            joiner = "" if lang == "zho_Hans" else " "
            lines = [joiner.join(WORDS[lang][i] for i in row) + f" {k}" for k, row in enumerate(rows)]
            (raw / f"{split}.eng_Latn-{tgt}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def raw(tmp_path):
    folder = tmp_path / "raw"
    folder.mkdir()
    for k, (tgt, n) in enumerate((("deu_Latn", 600), ("rus_Cyrl", 120), ("zho_Hans", 30), ("ell_Grek", 40))):
        write_direction(folder, tgt, n, k)
    return folder


def settings(raw, tmp_path, directions, **extra) -> dict:
    return {
        "destdir": str(tmp_path / "data_bin"), "directions": directions, "trainpref": str(raw / "train"),
        "validpref": str(raw / "valid"), "vocab_size": 120, "character_coverage": 1.0, "num_shards": 2,
        "spm_temperature": 5, "workers": 1, **extra,
    }


def test_three_directions_share_one_model_and_dictionary_in_the_nllb_layout(raw, tmp_path):
    directions = ["eng_Latn-deu_Latn", "eng_Latn-rus_Cyrl", "eng_Latn-zho_Hans"]
    summary = prepare(build_config(settings(raw, tmp_path, directions)), progress=False)
    out = summary.destdir
    shared = Dictionary.load(out / "dict.txt")
    for lang in ("eng_Latn", "deu_Latn", "rus_Cyrl", "zho_Hans"):
        assert f"__{lang}__" in shared, "one language token per language"
        assert (out / f"dict.{lang}.txt").read_bytes() == (out / "dict.txt").read_bytes()
        assert (out / "shard001" / f"dict.{lang}.txt").exists(), "fairseq reads dictionaries from every shard"
    spm = SentencePieceEncoder(out / "spm.model")
    for name, n in (("eng_Latn-deu_Latn", 600), ("eng_Latn-rus_Cyrl", 120), ("eng_Latn-zho_Hans", 30)):
        tgt = name.split("-")[1]
        parts = [IndexedDataset(out / f"shard{k:03d}" / f"train.{name}.{tgt}") for k in range(2)]
        assert [len(p) for p in parts] == [n // 2, n // 2], "train split evenly over num_shards"
        assert not (out / "shard001" / f"valid.{name}.{tgt}.idx").exists(), "valid/test only in shard000"
        first = parts[0][0]
        assert first[-1] == shared.eos_index
        text = spm.processor.decode_pieces([shared.symbols[i] for i in first[:-1]])
        expected = (raw / f"train.{name}.{tgt}").read_text(encoding="utf-8").split("\n")[0]
        assert text == expected, "ids decode back to the first training line"
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    listed = manifest["summary"]["directions"]
    assert sorted(listed) == sorted(directions)
    assert listed["eng_Latn-rus_Cyrl"]["splits"]["train"]["langs"]["rus_Cyrl"]["shards"] == 2
    assert manifest["summary"]["shards"] == ["shard000", "shard001"]
    assert manifest["vocab"]["lang_tokens"]["zho_Hans"] == shared.index("__zho_Hans__")
    assert verify_directory(out) == []


def test_adding_a_direction_encodes_only_the_new_one_and_keeps_every_id(raw, tmp_path):
    first = ["eng_Latn-deu_Latn", "eng_Latn-rus_Cyrl"]
    out = prepare(build_config(settings(raw, tmp_path, first)), progress=False).destdir
    before = {p.name: p.read_bytes() for p in (out / "shard000").glob("train.*.bin")}
    old_dict = Dictionary.load(out / "dict.txt")
    again = prepare(build_config(settings(raw, tmp_path, [*first, "eng_Latn-ell_Grek"])), progress=False)
    assert again.ran and all(stage.startswith("eng_Latn-ell_Grek.") or stage == "dictionary" for stage in again.ran)
    assert "tokenizer" not in again.ran, "the model trained on the first directions is kept"
    new_dict = Dictionary.load(out / "dict.txt")
    assert all(new_dict.index(s) == i for i, s in enumerate(old_dict.symbols) if not s.startswith("madeupword"))
    assert "__ell_Grek__" in new_dict
    assert {p.name: p.read_bytes() for p in (out / "shard000").glob("train.*.bin") if p.name in before} == before
    assert (out / "shard000" / "train.eng_Latn-ell_Grek.ell_Grek.idx").exists()
    # the kept model has no Greek: one warning, in the summary and in the manifest
    unknown = [w for w in again.warnings if w.startswith("direction eng_Latn-ell_Grek: ") and "ell_Grek tokens" in w]
    assert len(unknown) == 1 and "<unk>" in unknown[0], again.warnings
    assert unknown[0] in json.loads((out / "manifest.json").read_text(encoding="utf-8"))["run"]["warnings"]
    retrained = prepare(build_config(settings(raw, tmp_path, [*first, "eng_Latn-ell_Grek"], retrain_tokenizer=True)),
                        progress=False)
    assert "tokenizer" in retrained.ran


def test_temperature_quotas_follow_n_to_the_one_over_t_and_fill_the_budget():
    lines = {"big": 100_000, "mid": 10_000, "small": 100}
    quotas = temperature_quotas(lines, 20_000, 5.0)
    assert quotas["small"] == 100, "a language asking for more than it has gives all its lines"
    p = np.array([100_000, 10_000]) ** 0.2
    share = p / p.sum() * (20_000 - 100)
    assert abs(quotas["big"] - share[0]) <= 1 and abs(quotas["mid"] - share[1]) <= 1
    assert temperature_quotas(lines, 10**9, 5.0) == lines, "everything fits: take everything"
    assert temperature_quotas(lines, 20_000, 1.0)["big"] > temperature_quotas(lines, 20_000, 5.0)["big"]


def test_bad_directions_are_named(raw, tmp_path):
    with pytest.raises(ConfigError, match="direction 'eng-Latn-x'"):
        build_config(settings(raw, tmp_path, ["eng-Latn-x"]))
    with pytest.raises(ConfigError, match="direction eng_Latn-fra_Latn: no training files"):
        build_config({**settings(raw, tmp_path, {"eng_Latn-fra_Latn": {"validpref": "x"}}), "trainpref": []})
    with pytest.raises(ConfigError, match="spm-temperature must be > 0"):
        build_config(settings(raw, tmp_path, ["eng_Latn-deu_Latn"], spm_temperature=0))
    with pytest.raises(TokenmillError, match=r"direction eng_Latn-fra_Latn: .*eng_Latn-fra_Latn.eng_Latn: no such"):
        prepare(build_config(settings(raw, tmp_path, ["eng_Latn-deu_Latn", "eng_Latn-fra_Latn"])), progress=False)


@pytest.mark.parametrize("point", ["tokenizer", "binarize.train.rus_Cyrl:midway", "eng_Latn-deu_Latn.clean.valid"])
def test_a_killed_multilingual_run_rerun_gives_identical_files(raw, tmp_path, point):
    import filecmp
    import signal

    import yaml

    from tests.prepare.test_restart import data_files, run_prepare

    directions = ["eng_Latn-deu_Latn", "eng_Latn-rus_Cyrl"]
    reference = prepare(build_config(settings(raw, tmp_path / "ref", directions)), progress=False).destdir
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(settings(raw, tmp_path, directions)), encoding="utf-8")
    killed = run_prepare(config, crash_at=point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    out = tmp_path / "data_bin"
    assert not (out / "manifest.json").exists(), "a killed run never leaves a finished-looking directory"
    assert run_prepare(config).returncode == 0
    assert data_files(out) == data_files(reference)
    names = [p for p in data_files(reference) if p.name not in ("manifest.json", "preprocess.log")]
    assert [str(p) for p in names if not filecmp.cmp(reference / p, out / p, shallow=False)] == []
    assert verify_directory(out) == []


def test_a_rerun_with_fewer_shards_leaves_no_stale_shard_behind(raw, tmp_path):
    from tokenmill.data.multi_layout import discover

    directions = ["eng_Latn-deu_Latn", "eng_Latn-rus_Cyrl"]
    out = prepare(build_config(settings(raw, tmp_path, directions, num_shards=4)), progress=False).destdir
    assert (out / "shard003" / "train.eng_Latn-deu_Latn.deu_Latn.idx").exists()
    prepare(build_config(settings(raw, tmp_path, directions, num_shards=2)), progress=False)
    assert sorted(p.name for p in out.glob("shard*")) == ["shard000", "shard001"], "emptied shard folders go"
    assert [len(d.shards) for d in discover(out, "train").directions] == [2, 2]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["summary"]["shards"] == ["shard000", "shard001"]
    total = sum(len(IndexedDataset(out / f"shard{k:03d}" / "train.eng_Latn-deu_Latn.deu_Latn")) for k in range(2))
    assert total == 600, "every pair once"
    assert verify_directory(out) == []


def test_a_retrained_model_includes_the_added_directions(raw, tmp_path):
    first = ["eng_Latn-deu_Latn", "eng_Latn-rus_Cyrl"]
    prepare(build_config(settings(raw, tmp_path, first)), progress=False)
    changed = settings(raw, tmp_path, [*first, "eng_Latn-ell_Grek"], vocab_size=130)
    summary = prepare(build_config(changed), progress=False)
    assert "tokenizer" in summary.ran
    assert summary.vocab["tokenizer_trained_on"] == sorted([*first, "eng_Latn-ell_Grek"])
    assert summary.languages["ell_Grek"]["spm_sample_lines"] > 0


def test_training_reads_the_language_token_format_prepare_recorded(raw, tmp_path):
    from tokenmill.loader import multilingual_batches

    out = prepare(build_config(settings(raw, tmp_path, ["eng_Latn-deu_Latn"], lang_token_format="<{lang}>")),
                  progress=False).destdir
    shared = Dictionary.load(out / "dict.txt")
    batches = multilingual_batches(out, collate="fairseq", cache=False)
    batch = next(iter(batches))
    assert set(batch["target"][:, 0].tolist()) == {shared.index("<deu_Latn>")}
    with pytest.raises(ConfigError, match=r"direction '\.\./x-y'"):
        build_config(settings(raw, tmp_path, ["../x-y"]))


def test_piece_filters_apply_to_every_direction(raw, tmp_path):
    directions = ["eng_Latn-deu_Latn", "eng_Latn-rus_Cyrl"]
    summary = prepare(build_config(settings(raw, tmp_path, directions, filters={"max_tokens": 12})), progress=False)
    out = summary.destdir
    for name in directions:
        pieces = summary.directions[name].splits["train"]["clean"]["pieces"]
        assert pieces["dropped_tokens"] > 0 and pieces["kept"] > 0, pieces
        for lang in name.split("-"):
            shards = [IndexedDataset(out / f"shard{k:03d}" / f"train.{name}.{lang}") for k in range(2)]
            assert max(int(shard.sizes.max()) for shard in shards) <= 12 + 1, "pieces + </s> within the limit"
            half = -(-pieces["kept"] // 2)
            assert [len(shard) for shard in shards] == [half, pieces["kept"] - half], "the kept pairs, evenly"
