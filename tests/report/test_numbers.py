"""The report's numbers against the manifest, against numpy computed from the stores, and against
the commands that compute the same things (``tokenmill batches``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tokenmill.commands.batches import batches
from tokenmill.commands.report import report as report_command
from tokenmill.data.blending import build_blending_indices
from tokenmill.data.gpt_index import GPTIndexConfig, build_gpt_index
from tokenmill.errors import TokenmillError
from tokenmill.report import ReportOptions, default_output, gather, read_dropped, to_json, write_report
from tokenmill.report.corpus import JOINT_QUANTILE
from tokenmill.report.layout import open_data_dir
from tokenmill.store.layout import dropped_path
from tokenmill.store.manifest import verify_directory
from tokenmill.store.reader import IndexedDataset

FAST = ReportOptions(max_tokens=256, world_size=2, seq_length=64)


def _manifest(directory: Path) -> dict:
    return json.loads((directory / "manifest.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def pairs_report(pairs_dir: Path) -> dict:
    return gather(pairs_dir, FAST)


def test_overview_is_the_manifest(pairs_dir: Path, pairs_report: dict) -> None:
    manifest = _manifest(pairs_dir)
    o = pairs_report["overview"]
    assert o["created_by"] == manifest["created_by"]
    assert o["verify"] == {**o["verify"], "ok": True, "problem_count": 0, "files": len(manifest["files"])}
    assert o["disk"]["listed_bytes"] == sum(f["bytes"] for f in manifest["files"].values())
    assert {s["prefix"]: (s["items"], s["tokens"]) for s in o["stores"]} == {
        p: (s["items"], s["tokens"]) for p, s in manifest["stores"].items()
    }
    assert o["vocab"]["sizes"] == {lang: d["size"] for lang, d in manifest["vocab"]["dictionaries"].items()}
    stages = manifest["run"]["stages"]
    assert {s["name"]: s["seconds"] for s in o["stages"]} == {k: v["seconds"] for k, v in stages.items()}
    assert sum(g["seconds"] for g in o["stage_groups"]) == pytest.approx(sum(v["seconds"] for v in stages.values()))
    assert o["warnings"] == manifest["run"].get("warnings", [])


def test_sides_match_manifest_and_numpy(pairs_dir: Path, pairs_report: dict) -> None:
    manifest = _manifest(pairs_dir)
    assert [p["key"] for p in pairs_report["parts"]] == ["train", "valid", "test"]
    for part in pairs_report["parts"]:
        recorded = manifest["summary"]["splits"][part["split"]]["langs"]
        assert part["checks"] == []
        for lang, side in part["sides"].items():
            store = IndexedDataset(pairs_dir / f"{part['split']}.en-de.{lang}")
            sizes = np.asarray(store.sizes)
            assert side["items"] == recorded[lang]["sentences"] == len(sizes)
            assert side["tokens"] == recorded[lang]["tokens"] == int(sizes.sum())
            assert side["recorded"]["unk"] == recorded[lang]["unk"]
            lengths = side["lengths"]
            assert (lengths["min"], lengths["max"]) == (sizes.min(), sizes.max())
            assert lengths["mean"] == pytest.approx(sizes.mean())
            for q, value in lengths["percentiles"].items():
                assert value == np.sort(sizes)[int(np.floor(float(q) / 100 * (len(sizes) - 1)))]
            hist = side["histogram"]
            assert sum(hist["counts"]) == len(sizes)
            expected, _ = np.histogram(sizes, bins=np.asarray(hist["edges"]))
            assert hist["counts"] == expected.tolist()
            # token counts are exact for a store this small: compare with a plain bincount
            counts = np.bincount(np.asarray(store.tokens), minlength=side["vocab_size"])
            assert side["sample_exact"] and side["sampled_tokens"] == int(counts.sum())
            for top in side["top_tokens"]:
                assert top["count"] == counts[top["id"]] and top["id"] != 2
            assert [t["count"] for t in side["top_tokens"]] == sorted(np.delete(counts, 2), reverse=True)[:15]
            assert side["unused"] == int(np.count_nonzero(counts[: side["vocab_size"]] == 0))


def test_joint_density_matches_numpy(pairs_dir: Path, pairs_report: dict) -> None:
    part = pairs_report["parts"][0]
    src = np.asarray(IndexedDataset(pairs_dir / "train.en-de.en").sizes)
    tgt = np.asarray(IndexedDataset(pairs_dir / "train.en-de.de").sizes)
    joint = part["joint"]
    limit = int(max(np.percentile(src, JOINT_QUANTILE), np.percentile(tgt, JOINT_QUANTILE)))
    assert joint["limit"] == limit
    edges = np.arange(joint["bins"] + 1) * joint["width"]
    edges[-1] = max(src.max(), tgt.max()) + 1  # the last cell takes everything longer
    expected, _, _ = np.histogram2d(tgt, src, bins=(edges, edges))
    assert np.array_equal(np.asarray(joint["counts"]), expected)
    ratio = np.maximum(src, tgt) / np.maximum(np.minimum(src, tgt), 1)
    assert joint["off_diagonal"] == int((ratio > 3).sum())
    assert joint["correlation"] == pytest.approx(np.corrcoef(src, tgt)[0, 1])


def test_cleaning_funnel_and_samples(pairs_dir: Path, pairs_report: dict) -> None:
    clean = _manifest(pairs_dir)["summary"]["splits"]["train"]["clean"]
    info = pairs_report["parts"][0]["cleaning"]
    assert info["read"] == clean["read"]["read"] and info["kept"] == clean["kept"]["pairs"] and info["adds_up"]
    dropped = {s["reason"]: s["dropped"] for s in info["steps"]}
    for name, value in clean["filter"].items():
        if name.startswith("dropped_"):
            assert dropped[name.removeprefix("dropped_")] == value
    assert dropped["leakage"] == clean["leakage"]["leaked"] and dropped["dedup"] == clean["dedup"]["duplicates"]
    samples = info["samples"]
    assert samples == read_dropped(pairs_dir, "train")
    raw_src = (pairs_dir.parent / "raw" / "train.en").read_text(encoding="utf-8").split("\n")
    for reason, records in samples.items():
        assert 0 < len(records) <= min(20, dropped[reason])
        for record in records:
            assert record["src"] == raw_src[record["line"] - 1]  # the corpus needs no normalization
        lines = np.array([r["line"] for r in records])
        assert lines.tolist() == sorted(lines.tolist())
    assert {r["src"] for r in samples["dedup"]} == {"the cat sees the house"}
    assert all(r["src"] == "" for r in samples["empty"])
    assert all(r["src"] == r["tgt"] for r in samples["identical"])
    # twenty-six pairs were too long: the sample keeps the twenty lines of smallest hash
    assert len(samples["tokens"]) == 20
    assert all(len(raw_src[r["line"] - 1].split()) > 12 for r in samples["tokens"])
    assert pairs_report["parts"][1]["cleaning"]["samples"] == {}  # valid is only normalized: nothing dropped


def _batches_json(directory: Path, *flags: str) -> dict:
    result = CliRunner().invoke(batches, [str(directory), "--json", "--no-cache", *flags])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_batching_equals_tokenmill_batches(pairs_dir: Path, pairs_report: dict) -> None:
    b = pairs_report["batching"]
    assert b["world_size"] == 2 and b["max_tokens"] == 256 and b["pairs"] == 379
    for mode, numbers in b["modes"].items():
        expected = _batches_json(pairs_dir, "--max-tokens", "256", "--world-size", "2", "--mode", mode)
        assert numbers["batches"] == expected["num_batches"]
        assert numbers["batches_per_rank"] == expected["num_batches_per_rank"][0]
        assert numbers["samples"] == expected["num_samples"]
        assert numbers["padding_fraction"] == pytest.approx(expected["padding_fraction"])
        assert numbers["tokens_per_rank"] == expected["tokens_per_rank"]
        assert numbers["padded_tokens"] == expected["padded_tokens"]
    packed = _batches_json(pairs_dir, "--max-tokens", "256", "--world-size", "2", "--pack-length",
                           str(b["pack_length"]))
    assert b["packed"]["padding_fraction"] == pytest.approx(packed["padding_fraction"])
    assert b["packed"]["extra"]["rows"] == packed["packed"]["rows"]
    shapes = b["shapes"]
    assert shapes["batches"] == b["modes"]["lowpad"]["batches"]
    assert sum(c for _, _, c in shapes["points"]) == shapes["batches"]


def test_many_directions(multi_dir: Path) -> None:
    manifest = _manifest(multi_dir)
    rep = gather(multi_dir, ReportOptions(max_tokens=256, temperatures=(1.0, 5.0, 100.0)))
    assert rep["kind"] == "multilingual"
    rows = {r["direction"]: r for r in rep["directions"]["directions"]}
    for name, info in manifest["summary"]["directions"].items():
        assert rows[name]["pairs"]["train"] == info["splits"]["train"]["langs"]["eng_Latn"]["sentences"]
        assert rows[name]["shards"] == ["shard000", "shard001"]
    # epoch 1 reads shard000 of each direction: p ∝ n^(1/T) over those pairs, computed here with numpy
    names = list(rows)
    n = np.array([len(IndexedDataset(multi_dir / "shard000" / f"train.{d}.eng_Latn")) for d in names], float)
    for entry in rep["directions"]["sampling"]:
        t = entry["temperature"]
        p = (n / n.sum()) ** (1 / t)
        p /= p.sum()
        shares = np.array([d["share"] for d in entry["directions"]])
        assert shares == pytest.approx(p, rel=1e-12)
        drawn = np.array([d["drawn"] for d in entry["directions"]])
        assert drawn.sum() == entry["virtual_size"]
        assert np.all(np.abs(drawn - p * entry["virtual_size"]) <= 1)
    expected = _batches_json(multi_dir, "--max-tokens", "256", "--temperature", "1")
    assert rep["batching"]["modes"]["lowpad"]["batches"] == expected["num_batches"]
    assert rep["batching"]["modes"]["lowpad"]["samples"] == expected["num_samples"]
    assert [p["key"] for p in rep["parts"]][:2] == ["eng_Latn-deu_Latn/train", "eng_Latn-deu_Latn/valid"]
    for part in rep["parts"]:
        recorded = manifest["summary"]["directions"][part["direction"]]["splits"][part["split"]]["langs"]
        assert {lang: s["tokens"] for lang, s in part["sides"].items()} == {
            lang: recorded[lang]["tokens"] for lang in part["langs"]
        }


def test_lm_documents_and_gpt_samples(lm_dir: Path) -> None:
    manifest = _manifest(lm_dir)
    rep = gather(lm_dir, ReportOptions(seq_length=64, blend=((1.0, "train"), (3.0, str(lm_dir / "train")))))
    assert rep["kind"] == "monolingual" and rep["batching"] is None
    [split] = rep["lm"]["splits"]
    store = IndexedDataset(lm_dir / "train")
    assert split["documents"] == manifest["stores"]["train"]["documents"] == len(store.document_indices) - 1
    assert split["tokens"] == manifest["stores"]["train"]["tokens"]
    sizes = np.asarray(store.sizes, dtype=np.int64)
    assert split["longer_than_sample"] == int((sizes > 64).sum())
    gpt = split["gpt"]
    assert gpt["samples"] == (int(sizes.sum()) - 1) // 64
    # independent: sample k reads stream tokens [64k, 64k + 64] of the shuffled documents
    index = build_gpt_index(sizes, GPTIndexConfig(seq_length=64, seed=1234, num_epochs=1))
    ends = np.cumsum(sizes[index.document_index])
    first = np.searchsorted(ends, np.arange(gpt["samples"]) * 64, side="right")
    last = np.searchsorted(ends, np.arange(gpt["samples"]) * 64 + 64, side="right")
    assert gpt["crossing"] == int((last > first).sum())
    blend = rep["blend"]
    weights = np.array([0.25, 0.75])
    dataset_index, _ = build_blending_indices(weights, blend["samples"])
    assert blend["samples"] == 2 * gpt["samples"]
    assert [d["drawn"] for d in blend["datasets"]] == np.bincount(dataset_index, minlength=2).tolist()
    assert [d["share"] for d in blend["datasets"]] == pytest.approx(weights, abs=1 / blend["samples"])


def test_shards_and_filters_counted_in_pieces(sharded_dir: Path) -> None:
    manifest = _manifest(sharded_dir)
    data = open_data_dir(sharded_dir)
    assert data.shard_folders == ["shard000", "shard001", "shard002"]
    rep = gather(sharded_dir, FAST)
    train = rep["parts"][0]
    recorded = manifest["summary"]["splits"]["train"]
    assert train["shards"] == data.shard_folders
    assert train["sides"]["en"]["items"] == recorded["langs"]["en"]["sentences"] == sum(
        s["items"] for p, s in manifest["stores"].items() if p.endswith("train.en-de.en")
    )
    assert "shard000" in rep["batching"]["what"]
    assert rep["batching"]["pairs"] == manifest["stores"]["shard000/train.en-de.en"]["items"]
    # the token-count filter ran on the encoded pieces, after the text clean-up: the funnel goes on to it
    info = train["cleaning"]
    clean = recorded["clean"]
    steps = {s["reason"]: s for s in info["steps"]}
    assert steps["pieces.tokens"]["dropped"] == clean["pieces"]["dropped_tokens"] > 0
    assert steps["pieces.tokens"]["manifest"] == ["pieces", "dropped_tokens"]
    assert info["cleaned"] == clean["kept"]["pairs"]
    assert info["kept"] == clean["pieces"]["kept"] == train["sides"]["en"]["items"]
    assert info["adds_up"] and list(steps)[-1] == "pieces.tokens"


def test_command_writes_page_and_json(pairs_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    result = CliRunner().invoke(report_command, [str(pairs_dir), "-o", str(out), "--max-tokens", "256"])
    assert result.exit_code == 0, result.output
    assert str(out) in result.output and out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    result = CliRunner().invoke(report_command, [str(pairs_dir), "--json", "--max-tokens", "256", "--no-verify"])
    assert result.exit_code == 0, result.output
    numbers = json.loads(result.output)
    assert numbers["overview"]["verify"] is None
    assert numbers["parts"][0]["sides"]["en"]["tokens"] == _manifest(pairs_dir)["summary"]["splits"]["train"][
        "langs"]["en"]["tokens"]
    assert json.loads(to_json(numbers)) == numbers


def test_default_page_sits_in_the_directory_and_verify_stays_clean(sharded_dir: Path) -> None:
    path, numbers = write_report(sharded_dir, options=FAST)
    assert path == default_output(sharded_dir) == sharded_dir / "report.html"
    assert path.is_file() and numbers["kind"] == "pairs"
    assert verify_directory(sharded_dir) == []


def test_not_a_prepared_directory(tmp_path: Path) -> None:
    with pytest.raises(TokenmillError, match=r"manifest\.json"):
        gather(tmp_path)
    result = CliRunner().invoke(report_command, [str(tmp_path)])
    assert result.exit_code != 0 and isinstance(result.exception, TokenmillError)


@pytest.mark.parametrize("workers", [1, 2])
def test_prepare_keeps_the_same_drop_sample_whatever_its_chunks_and_workers(pairs_dir: Path, tmp_path: Path,
                                                                             workers: int) -> None:
    from tests.report.conftest import FILTERS, expected_drop_samples
    from tokenmill.prepare import build_config, prepare
    from tokenmill.prepare.stages import clean

    raw = pairs_dir.parent / "raw"
    expected = expected_drop_samples(raw, FILTERS)
    assert json.loads(dropped_path(pairs_dir, "train").read_text(encoding="utf-8")) == expected
    settings = {
        "source_lang": "en", "target_lang": "de", "trainpref": str(raw / "train"), "validpref": str(raw / "valid"),
        "testpref": str(raw / "test"), "destdir": str(tmp_path / "bin"), "tokenizer": "none",
        "joined_dictionary": True, "workers": workers, "chunk_lines": 7, "filters": FILTERS,
    }
    original = clean.PARALLEL_CLEAN_MIN_LINES
    clean.PARALLEL_CLEAN_MIN_LINES = 0  # real worker processes even on this small corpus
    try:
        prepare(build_config(settings), progress=False)
    finally:
        clean.PARALLEL_CLEAN_MIN_LINES = original
    assert json.loads(dropped_path(tmp_path / "bin", "train").read_text(encoding="utf-8")) == expected


def test_a_joined_dictionary_is_parsed_once_and_different_contents_apart(pairs_dir: Path, tmp_path: Path,
                                                                        monkeypatch) -> None:
    import shutil

    import tokenmill.report.corpus as corpus

    parsed: list[str] = []
    real = corpus.vocabulary_symbols

    def counting(path, kind, backend=None):
        parsed.append(Path(path).name)
        return real(path, kind)

    monkeypatch.setattr(corpus, "vocabulary_symbols", counting)
    records = [_manifest(pairs_dir)["stores"][f"train.en-de.{lang}"] for lang in ("en", "de")]
    assert records[0]["vocab"] != records[1]["vocab"]  # one file per language, the same bytes (joined)
    vocabularies = corpus.Vocabularies(pairs_dir)
    first, second = (vocabularies.symbols(r) for r in records)
    assert len(parsed) == 1 and first is second and first == real(pairs_dir / records[1]["vocab"], "fairseq")
    copy = tmp_path / "copy"
    shutil.copytree(pairs_dir, copy)
    with open(copy / records[1]["vocab"], "a", encoding="utf-8") as handle:
        handle.write("extra 1\n")  # now different content: its own symbols
    parsed.clear()
    vocabularies = corpus.Vocabularies(copy)
    first, second = (vocabularies.symbols(r) for r in records)
    assert len(parsed) == 2 and second is not None and second[-1] == "extra" and first[-1] != "extra"


def test_gpt_samples_skip_documents_without_ids(tmp_path: Path) -> None:
    """Megatron's flags store a document without ids as a document without a sequence: the GPT numbers are
    those of the documents that hold tokens (what training's index is built over)."""
    from tokenmill.report.lm import lm_numbers
    from tokenmill.store import IndexedWriter

    lengths = np.array([0, 70, 5, 0, 0, 130, 64, 0, 9])
    for name, kept in (("with_empty", lengths), ("without", lengths[lengths > 0])):
        with IndexedWriter(tmp_path / name, layout="megatron", dtype=np.uint16) as writer:
            writer.add_documents(np.arange(int(kept.sum())) % 50, kept)
    with_empty = lm_numbers([IndexedDataset(tmp_path / "with_empty")], 16)
    without = lm_numbers([IndexedDataset(tmp_path / "without")], 16)
    assert with_empty["documents"] == 9 and without["documents"] == 5
    assert with_empty["gpt"] == without["gpt"] and with_empty["gpt"]["samples"] > 0
