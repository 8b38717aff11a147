"""GPT samples and Megatron blends on the command line (``--seq-length``, ``--blend``): ``tokenmill batches
--state`` prints the consumption ledger of a saved GPT or blend state (also across a blend change), and
``tokenmill trace`` gives each sample's documents, token ranges and input lines, and the micro batches a line
is served in. On real held-out text (the sample's sentences, with repeats for dedup and short lines for the
filter, byte-level BPE): every traced document re-encodes from its line, the pieces are the served tokens."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import tokenmill
from tests.loader.test_gpt_identity import write_store
from tests.loader.trace_corpus import real_pairs
from tokenmill.cli import cli
from tokenmill.data.blend_members import member_key
from tokenmill.store import IndexedDataset
from tokenmill.vocab.tokenizer import load_tokenizer, train_tokenizer

CONFIG = tokenmill.GPTBatchConfig(global_batch_size=8, micro_batch_size=2)
SEED = 3
GPT = ["--seq-length", "32", "--gpt-seed", str(SEED), "--global-batch-size", "8", "--micro-batch-size", "2",
       "--world-size", "2", "--no-cache"]


@pytest.fixture(scope="module")
def lm(tmp_path_factory) -> dict:
    """Two JSONL corpora ``a`` and ``b`` of real sentences prepared (dedup, a length filter) into folders of
    one Megatron store each, with the tokenizer they were encoded with."""
    folder = tmp_path_factory.mktemp("gpt-cli")
    lines = [text for text, _ in real_pairs("train")] + [text for text, _ in real_pairs("valid")]
    corpora = {"a": lines[:220] + lines[:30], "b": lines[220:] + lines[230:250]}
    model = folder / "tokenizer.json"
    train_tokenizer("hf", lines, {"kind": "byte-level-bpe", "vocab_size": 600}, model)
    stores = {}
    for name, part in corpora.items():
        (folder / f"{name}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in part), encoding="utf-8")
        tokenmill.prepare({
            "input": str(folder / f"{name}.jsonl"), "output_prefix": str(folder / name / name),
            "json_keys": "text", "tokenizer_type": "HuggingFaceTokenizer", "tokenizer_model": str(model),
            "append_eod": True, "dedup": True, "filters": {"min_chars": 30}, "workers": 1}, progress=False)
        stores[name] = IndexedDataset(folder / name / f"{name}_text_document")
    return {"folder": folder, "corpora": corpora, "model": model, "stores": stores}


def gpt(lm: dict, name: str) -> tokenmill.GPTDataset:
    return tokenmill.GPTDataset(lm["stores"][name], tokenmill.GPTDatasetConfig(seq_length=32, seed=SEED), cache=False)


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output


def refused(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 2 and result.output.startswith("error: "), result.output
    assert "Traceback" not in result.output
    return result.output


def saved(iterators, epoch: int, step: int, path: Path) -> Path:
    """Every rank at micro batch ``step`` of pass ``epoch``; rank 0's state written to ``path``."""
    for it in iterators:
        it.seek(epoch, step)
    path.write_text(json.dumps(iterators[0].state_dict()), encoding="utf-8")
    return path


def test_batches_state_prints_the_ledger_of_a_gpt_state_in_this_pass_and_in_all(lm, tmp_path):
    dataset = gpt(lm, "a")
    total = len(dataset) // 8 * 8
    steps = total // 4  # micro batches per rank in one pass (2 ranks x 2 samples)
    state = saved([tokenmill.batches(dataset, CONFIG, rank=r, world_size=2) for r in range(2)], 2, 3,
                  tmp_path / "state.json")
    shown = json.loads(run("batches", str(lm["folder"] / "a"), *GPT, "--state", str(state), "--json"))
    assert shown["samples_per_pass"] == total and shown["micro_batches_per_rank"] == steps
    (name, row), = shown["ledger"]["sources"].items()
    assert name.endswith("a_text_document") and row["member"] == dataset.fingerprint()
    assert (shown["ledger"]["epoch"], shown["ledger"]["step"]) == (2, 3)
    assert (row["epoch_samples"], row["epoch_tokens"]) == (12, 12 * 32), "3 micro batches x 2 ranks x 2 samples"
    assert (row["total_samples"], row["total_tokens"]) == (total + 12, (total + 12) * 32)
    table = run("batches", str(lm["folder"] / "a"), *GPT, "--state", str(state))
    assert "consumption ledger at epoch 2, step 3:" in table
    assert f"{12:>13}" in table.splitlines()[-1] and str((total + 12) * 32) in table.splitlines()[-1]


def test_batches_state_prints_a_blend_ledger_and_one_across_a_blend_change(lm, tmp_path):
    members = {name: gpt(lm, name) for name in ("a", "b")}
    old = tokenmill.BlendedDataset([members["a"], members["b"]], [0.6, 0.4], size=64, cache=False)
    state = saved([tokenmill.batches(old, CONFIG, rank=r, world_size=2) for r in range(2)], 1, 5,
                  tmp_path / "s.json")
    served = np.bincount(np.asarray(old.dataset_index[:20]), minlength=2)  # Megatron serves positions 0, 1, ...
    a, b = (str(lm["folder"] / n / f"{n}_text_document") for n in ("a", "b"))
    same = json.loads(run("batches", str(lm["folder"]), *GPT, "--blend", "0.6", a, "--blend", "0.4", b,
                          "--blend-samples", "64", "--state", str(state), "--json"))
    assert [m["samples"] for m in same["members"]] == np.bincount(old.dataset_index, minlength=2).tolist()
    rows = list(same["ledger"]["sources"].values())
    assert [r["epoch_samples"] for r in rows] == served.tolist() and [r["member"] for r in rows] == [
        member_key(members["a"]), member_key(members["b"])]
    new = ["--blend", "1", b, "--blend-samples", "32"]  # a retired
    assert "--allow-mix-change" in refused("batches", str(lm["folder"]), *GPT, *new, "--state", str(state))
    changed = json.loads(run("batches", str(lm["folder"]), *GPT, *new, "--state", str(state), "--allow-mix-change",
                             "--json"))
    by_member = {r["member"]: r["total_samples"] for r in changed["ledger"]["sources"].values()}
    assert by_member == {member_key(members["a"]): served[0], member_key(members["b"]): served[1]}


def test_batches_state_counts_two_blend_members_with_equal_lengths_apart(tmp_path):
    """Two stores whose documents have the same lengths but other tokens: two members, two ledger rows."""
    web, other = (write_store(tmp_path / side / "web", offset) for side, offset in (("a", 0), ("b", 7)))
    config = tokenmill.GPTDatasetConfig(seq_length=32, seed=SEED)
    members = [tokenmill.GPTDataset(tokenmill.open(str(p)), config, cache=False) for p in (web, other)]
    blend = tokenmill.BlendedDataset(members, [0.5, 0.5], size=64, cache=False)
    state = saved([tokenmill.batches(blend, CONFIG, rank=r, world_size=2) for r in range(2)], 1, 5,
                  tmp_path / "s.json")
    shown = json.loads(run("batches", str(tmp_path), *GPT, "--blend", "0.5", str(web), "--blend", "0.5", str(other),
                           "--blend-samples", "64", "--state", str(state), "--json"))
    rows = {r["member"]: r["epoch_samples"] for r in shown["ledger"]["sources"].values()}
    served = np.bincount(np.asarray(blend.dataset_index[:20]), minlength=2)  # 5 micro batches x 2 ranks x 2
    assert rows == dict(zip(blend.mix["datasets"], served.tolist(), strict=True)) and len(rows) == 2


def test_gpt_flags_that_do_not_fit_are_one_error_line(lm, tmp_path):
    folder = str(lm["folder"] / "a")
    assert "--global-batch-size" in refused("batches", folder, "--seq-length", "32")
    assert "give --seq-length too" in refused("batches", folder, "--blend", "1", "a_text_document")
    assert "--temperature" in refused("batches", folder, *GPT, "--temperature", "5")
    assert "--seq-length N --global-batch-size B" in refused("batches", folder)
    assert "no token store nowhere" in refused("trace", folder, *GPT, "--blend", "1", "nowhere", "--step", "0")
    assert "--rank 2 is outside --world-size 2" in refused("trace", folder, *GPT, "--step", "0", "--rank", "2")
    state = saved([tokenmill.batches(gpt(lm, "a"), CONFIG, rank=r, world_size=2) for r in range(2)], 1, 2,
                  tmp_path / "state.json")
    assert "cannot resume" in refused("batches", folder, *GPT, "--gpt-seed", "4", "--state", str(state))


class Encoded:
    """The tokenizer the stores were made with: a line of the corpus as the ids of its stored document."""

    def __init__(self, lm: dict) -> None:
        self.tokenizer = load_tokenizer("hf", lm["model"])
        self.corpora = lm["corpora"]

    def check(self, source, traced: dict) -> None:
        """A traced row (``--json``): its pieces are the sample's tokens (and the extra label), each piece's
        document is its line (the text trace printed, the corpus's line) re-encoded with the end-of-document."""
        batch = source.get_batch([traced["sample"]])
        store = IndexedDataset(traced["store"])
        pieces = [store[p["document"]][p["start"]:p["stop"]] for p in traced["pieces"]]
        assert np.concatenate(pieces).tolist() == [*batch["tokens"][0].tolist(), int(batch["labels"][0][-1])]
        for piece in traced["pieces"]:
            assert piece["text"] == self.corpora[Path(piece["file"]).stem][piece["line"] - 1]
            ids = [int(i) for i in self.tokenizer.encode_batch([piece["text"]])[0]]
            assert store[piece["document"]].tolist()[:-1] == ids


def test_trace_gives_each_samples_documents_ranges_and_lines_and_source_finds_them(lm):
    dataset, encoded, spanning = gpt(lm, "a"), Encoded(lm), 0
    folder = str(lm["folder"] / "a")
    for step in range(len(dataset) // 8 * 8 // 4):
        for rank in range(2):
            rows = [json.loads(x) for x in run("trace", folder, *GPT, "--step", str(step), "--rank", str(rank),
                                               "--json").splitlines()]
            assert [r["row"] for r in rows] == [0, 1] and all("member" not in r for r in rows)
            for row in rows:
                encoded.check(dataset, row)
                spanning += len(row["pieces"]) > 1
            if step % 7 == 0:  # --source of the last piece's line lists this place
                last = rows[-1]["pieces"][-1]
                found = run("trace", folder, *GPT, "--source", f"a.jsonl:{last['line']}", "--epochs", "2")
                for epoch in (1, 2):
                    assert f"epoch {epoch}\tstep {step}\trank {rank}\trow 1\tsample {rows[-1]['sample']}" in found
    assert spanning > 10, "samples span several documents"
    table = run("trace", folder, *GPT, "--step", "2", "--rank", "1").splitlines()
    assert all(len(line.split("\t")) == 5 for line in table) and {line.split("\t")[0] for line in table} == {"0", "1"}


def test_trace_through_a_blend_names_the_member_and_finds_a_line_in_it(lm):
    members = [gpt(lm, name) for name in ("a", "b")]
    blend = tokenmill.BlendedDataset(members, [0.6, 0.4], size=64, cache=False)
    a, b = (str(lm["folder"] / n / f"{n}_text_document") for n in ("a", "b"))
    flags = [*GPT, "--blend", "0.6", a, "--blend", "0.4", b, "--blend-samples", "64"]
    encoded, seen = Encoded(lm), set()
    for step in range(64 // 4):
        rows = [json.loads(x) for x in run("trace", str(lm["folder"]), *flags, "--step", str(step), "--json")
                .splitlines()]
        for row in rows:
            assert row["member"] == int(blend.dataset_index[row["sample"]]) and row["store"] == (a, b)[row["member"]]
            encoded.check(blend, row)
            seen.add(row["member"])
    assert seen == {0, 1}
    table = run("trace", str(lm["folder"]), *flags, "--step", "0").splitlines()
    assert all("\tmember " in line and len(line.split("\t")) == 6 for line in table)
    corpus = lm["corpora"]["b"]
    dropped = next(n for n, text in enumerate(corpus, 1) if len(text) < 30)
    assert "is in no sample" in run("trace", str(lm["folder"]), *flags, "--source", f"b.jsonl:{dropped}")
