"""The T2T-compatible SubwordTextEncoder gives Tensor2Tensor's exact vocabularies, ids and texts.

Golden files in golden_t2t/ were written by T2T itself (benchmarks/t2t_oracle/make_golden.py, run
in the T2T venv); the ``t2t`` tests also run T2T live when its interpreter is available.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.peers import REPO, require_peer
from tokenmill.errors import ConfigError, FormatError, TokenmillError
from tokenmill.vocab.t2t.escape import escape_token, unescape_token
from tokenmill.vocab.t2t.sampling import sample_lines
from tokenmill.vocab.t2t.tokenizer import count_tokens, detokenize, tokenize
from tokenmill.vocab.t2t_subword import EOS_ID, SubwordTextEncoder

GOLDEN = Path(__file__).parent / "golden_t2t"
ORACLE = REPO / "benchmarks" / "t2t_oracle" / "t2t_oracle.py"
JOBS = json.loads((GOLDEN / "jobs.json").read_text(encoding="utf-8"))


def golden(name: str) -> dict:
    return json.loads((GOLDEN / f"golden_{name}.json").read_text(encoding="utf-8"))


def texts_of(job: Mapping, base: Path) -> list[str]:
    texts: list[str] = []
    for name in job.get("encode_files", []):
        texts.extend((base / name).read_bytes().decode("utf-8").split("\n"))
    return texts + list(job.get("encode", []))


def token_counts_of(job: Mapping, base: Path) -> Mapping[str, int]:
    if "token_counts" in job:
        return job["token_counts"]
    from tokenmill.vocab.t2t.sampling import sample_files

    return count_tokens(sample_files([base / p for p in job["corpus"]], job["file_byte_budget"]))


def run_ours(job: Mapping, base: Path) -> dict:
    """What our encoder produces for one oracle job (same keys as the oracle's result)."""
    result: dict = {}
    if "vocab_file" in job:
        enc = SubwordTextEncoder.load(base / job["vocab_file"])
    else:
        counts = token_counts_of(job, base)
        result["token_counts"] = dict(counts)
        options = dict(max_subtoken_length=job.get("max_subtoken_length"), reserved_tokens=job.get("reserved_tokens"))
        if "min_count" in job:
            enc = SubwordTextEncoder.build_from_token_counts(
                counts, job["min_count"], job.get("num_iterations", 4), **options
            )
        else:
            enc = SubwordTextEncoder.build_to_target_size(
                job["target_size"],
                counts,
                job.get("min_val", 1),
                job.get("max_val", 1000),
                num_iterations=job.get("num_iterations", 4),
                **options,
            )
    texts = texts_of(job, base)
    result["vocab"] = list(enc.all_subtoken_strings)
    result["encodings"] = [enc.encode(t) for t in texts]
    flat, lengths = enc.encode_batch(texts)
    result["batch_encodings"] = [a.tolist() for a in np.split(flat, np.cumsum(lengths)[:-1])] if texts else []
    result["decodings"] = [enc.decode(ids) for ids in result["encodings"]]
    result["decoded"] = [enc.decode(ids) for ids in job.get("decode", [])]
    result["tokens"] = [tokenize(t) for t in texts]
    return result


def assert_same_as_t2t(ours: dict, t2t: dict) -> None:
    assert ours["vocab"] == t2t["vocab"]
    if "token_counts" in t2t:
        assert ours["token_counts"] == t2t["token_counts"]
    assert ours["tokens"] == t2t["tokens"]
    assert ours["encodings"] == t2t["encodings"]
    assert ours["batch_encodings"] == t2t["encodings"]
    assert ours["decodings"] == t2t["decodings"]
    assert ours["decoded"] == t2t["decoded"]


# ---------------------------------------------------------------- golden files (always)
@pytest.mark.parametrize("job", JOBS, ids=[j["name"] for j in JOBS])
def test_matches_t2t_golden(job):
    assert_same_as_t2t(run_ours(job, GOLDEN), golden(job["name"]))


def test_golden_jobs_cover_the_cases_that_matter():
    names = {j["name"] for j in JOBS}
    for corpus in ("english", "chinese", "mixed", "escapes"):
        assert {f"{corpus}_target", f"{corpus}_budget", f"{corpus}_reserved", f"{corpus}_mc1_len4"} <= names
    # the byte budget really sampled (skipped lines): fewer tokens than reading the whole file
    whole = golden("english_target")["token_counts"]
    sampled = golden("english_budget")["token_counts"]
    assert sum(sampled.values()) < sum(whole.values()) / 2


def test_a_vocab_file_t2t_wrote_loads_and_saves_byte_identical(tmp_path):
    t2t_file = GOLDEN / "t2t_all.subwords"
    enc = SubwordTextEncoder.load(t2t_file)
    assert list(enc.all_subtoken_strings) == golden("all_target")["vocab"]
    assert enc.all_subtoken_strings[:2] == ("<pad>_", "<EOS>_")
    enc.save(tmp_path / "ours.subwords")
    assert (tmp_path / "ours.subwords").read_bytes() == t2t_file.read_bytes()


def test_built_vocab_saved_equals_t2t_file(tmp_path):
    job = next(j for j in JOBS if j["name"] == "all_target")
    counts = token_counts_of(job, GOLDEN)
    enc = SubwordTextEncoder.build_to_target_size(job["target_size"], counts)
    enc.save(tmp_path / "v.subwords")
    assert (tmp_path / "v.subwords").read_bytes() == (GOLDEN / "t2t_all.subwords").read_bytes()


# ------------------------------------------------------------------- live oracle
def run_oracle(jobs: list[dict], workdir: Path) -> list[dict]:
    python = require_peer("t2t")
    (workdir / "jobs.json").write_text(json.dumps(jobs, ensure_ascii=False), encoding="utf-8")
    proc = subprocess.run(
        [python, str(ORACLE), str(workdir / "jobs.json"), str(workdir / "results.json")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((workdir / "results.json").read_text(encoding="utf-8"))


@pytest.mark.t2t
def test_matches_live_t2t_on_the_golden_jobs(tmp_path):
    for path in GOLDEN.glob("*.txt"):
        shutil.copy(path, tmp_path / path.name)
    results = run_oracle(JOBS, tmp_path)
    for job, t2t in zip(JOBS, results, strict=False):
        assert_same_as_t2t(run_ours(job, tmp_path), t2t)
    assert (tmp_path / "t2t_all.subwords").read_bytes() == (GOLDEN / "t2t_all.subwords").read_bytes()


@pytest.mark.t2t
def test_matches_live_t2t_on_random_token_counts(tmp_path):
    rng = random.Random(7)
    alphabets = ["abcde", "ab_\\c", "中文字词语句", "xy z,.!", "ab1_\\\n;u", "😀a_"]
    jobs = []
    for i in range(30):
        alphabet = rng.choice(alphabets)
        counts = {
            "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 14))): rng.randint(1, 40)
            for _ in range(rng.randint(1, 80))
        }
        job = {
            "name": f"random{i}",
            "token_counts": counts,
            "num_iterations": rng.choice([1, 2, 4]),
            "max_subtoken_length": rng.choice([None, None, 2, 3, 5, 1]),
            "reserved_tokens": rng.choice([None, ["<pad>", "<EOS>", "ab_"], [], ["<pad>"], ["<pad>", "<EOS>", "ab"]]),
            "encode": ["".join(rng.choice(alphabet + " ☃") for _ in range(30)) for _ in range(3)],
        }
        if rng.random() < 0.5:
            job["min_count"] = rng.randint(1, 25)
        else:
            job.update(target_size=rng.randint(15, 90), max_val=rng.choice([50, 1000]))
        jobs.append(job)
    for job, t2t in zip(jobs, run_oracle(jobs, tmp_path), strict=False):
        assert_same_as_t2t(run_ours(job, tmp_path), t2t)


# -------------------------------------------------------------- pieces, by example
def test_tokenizer_splits_at_alphanumeric_boundaries_like_t2t():
    assert tokenize("Dude - that's so cool.") == ["Dude", " - ", "that", "'", "s", "so", "cool", "."]
    assert tokenize(" a b ") == [" ", "a", "b", " "]  # a single space survives only at the ends
    assert tokenize("中文English混合") == ["中文English混合"]
    assert tokenize("x_1") == ["x", "_", "1"]  # the underscore is not alphanumeric
    assert tokenize("") == []
    assert detokenize(["Dude", " - ", "that", "'", "s", "so", "cool", "."]) == "Dude - that's so cool."


def test_escaping_round_trips_and_matches_t2t_rules():
    alphabet = set("abc") | set("\\_u;0123456789")
    assert escape_token("a_b\\c", alphabet) == "a\\ub\\\\c_"
    assert escape_token("a☃\n", alphabet) == "a\\9731;\\10;_"
    for token in ["a_b\\c", "a☃\n", "\\u", "_", "x\\123;"]:
        assert unescape_token(escape_token(token, alphabet)) == token
    assert unescape_token("\\99999999999;_") == "\u3013"  # no such character


def test_byte_budget_sampling_keeps_every_nth_line(tmp_path):
    path = tmp_path / "corpus.txt"
    lines = [f"line number {i:03d}" for i in range(100)]  # 15 chars, 16 bytes each
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    # size 1600, budget 200 -> countermax int(1600/200/2) = 4: keep lines 4, 9, 14, ...
    # each kept line costs 15 characters, so 14 lines exhaust the budget (14*15 = 210 > 200)
    assert list(sample_lines(path, 200)) == [lines[i] for i in range(4, 100, 5)][:14]
    assert list(sample_lines(path, 1e9)) == lines  # a big budget reads everything


def test_lines_end_only_at_newline_lose_carriage_returns_and_are_stripped(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes("  a\rb\u2028c \r\n\tlast\x0c".encode())
    assert list(sample_lines(path, 1e6)) == ["ab\u2028c", "last"]


def test_encode_batch_appends_eos_for_binarization():
    enc = SubwordTextEncoder.load(GOLDEN / "t2t_all.subwords")
    texts = ["The river town.", "", "中文English"]
    flat, lengths = enc.encode_batch(texts, append_eos=True)
    expected = [[*enc.encode(t), EOS_ID] for t in texts]
    assert lengths.tolist() == [len(e) for e in expected]
    assert flat.tolist() == [i for e in expected for i in e]
    assert flat.dtype == np.int32 and lengths.dtype == np.int64


def test_decode_strip_extraneous_drops_trailing_pad_and_eos():
    enc = SubwordTextEncoder.load(GOLDEN / "t2t_all.subwords")
    ids = enc.encode("river town")
    assert enc.decode([*ids, EOS_ID, 0, 0], strip_extraneous=True) == "river town"
    assert enc.decode([*ids, EOS_ID]) == "river town<EOS>"  # T2T shows EOS when not stripped


_LOADED = SubwordTextEncoder.load(GOLDEN / "t2t_all.subwords")


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_decode_inverts_encode(text):
    assert _LOADED.decode(_LOADED.encode(text)) == text


def test_encode_batch_of_nothing_and_of_empty_lines():
    flat, lengths = _LOADED.encode_batch([])
    assert flat.size == 0 and lengths.size == 0
    flat, lengths = _LOADED.encode_batch(["", ""], append_eos=True)
    assert flat.tolist() == [EOS_ID, EOS_ID] and lengths.tolist() == [1, 1]


# ------------------------------------------------------------------- bad input
def test_bad_input_gets_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="must start with"):
        SubwordTextEncoder.build_from_token_counts({"a": 1}, 1, reserved_tokens=["<EOS>", "<pad>"])
    with pytest.raises(ConfigError, match="file_byte_budget"):
        list(sample_lines(GOLDEN / "english.txt", 0))
    with pytest.raises(ConfigError, match="cannot read"):
        list(sample_lines(tmp_path / "missing.txt", 100))
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nbroken \xff here\n")
    with pytest.raises(FormatError, match=r"bad.txt:2: not valid UTF-8"):
        list(sample_lines(bad, 1e6))
    empty = tmp_path / "empty.subwords"
    empty.write_bytes(b"")
    with pytest.raises(FormatError, match="empty T2T vocab file"):
        SubwordTextEncoder.load(empty)
    with pytest.raises(FormatError, match="newline"):
        SubwordTextEncoder(["<pad>_", "<EOS>_", "a\nb"]).save(tmp_path / "x.subwords")
    with pytest.raises(ConfigError, match="target vocabulary size"):
        SubwordTextEncoder.build_to_target_size(0, {"a": 1})
    with pytest.raises(TokenmillError, match="cannot spell"):
        SubwordTextEncoder(["<pad>_", "<EOS>_", "ab_"]).encode("ba")
