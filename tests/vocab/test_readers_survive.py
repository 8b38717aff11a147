"""Every vocabulary file a tokenizer or dictionary loader reads survives damage: a mutated ``spm.model``,
``tokenizer.json``, ``.tiktoken``, ``vocab.subwords``, ``dict.txt`` or ``tokenmill-tokenizer.json`` gives one
tokenmill error naming the file, or loads a tokenizer whose ids stay inside its vocabulary (T2T's also
round-trip). SentencePiece and ``tokenizers`` parse in native code: every read runs in a child interpreter
(``tests/survive``), so a segfault is a failure, not a lost test run."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.survive.harness import budget, mutated, survived
from tests.survive.mutations import byte_edits, json_edits, line_edits


@budget(40)
@given(st.data())
def test_a_damaged_sentencepiece_model_is_refused_or_encodes_in_range(survive_seeds, sandbox, data):
    seed = survive_seeds.spm
    edit = data.draw(byte_edits(seed.stat().st_size), label="edit")
    with mutated(seed, None, edit) as copy:
        survived(sandbox.call("tokenizer", backend="sentencepiece", path=str(copy)), [copy.name])


@budget(30)
@given(st.data())
def test_a_damaged_tokenizer_json_is_refused_or_encodes_in_range(survive_seeds, sandbox, data):
    seed = survive_seeds.tokenizer_json
    edit = data.draw(json_edits(seed.read_bytes()), label="edit")
    with mutated(seed, None, edit) as copy:
        survived(sandbox.call("tokenizer", backend="hf", path=str(copy)), [copy.name])
        survived(sandbox.call("bpe_ranks", path=str(copy)), [copy.name])


@budget(30)
@given(st.data())
def test_damaged_tiktoken_ranks_are_refused_or_encode_in_range(survive_seeds, sandbox, data):
    seed = survive_seeds.tiktoken
    edit = data.draw(line_edits(seed.read_bytes()), label="edit")
    with mutated(seed, None, edit) as copy:
        survived(sandbox.call("tokenizer", backend="tiktoken", path=str(copy)), [copy.name])


@budget(30)
@given(st.data())
def test_a_damaged_t2t_vocab_is_refused_or_round_trips(survive_seeds, sandbox, data):
    seed = survive_seeds.subwords
    edit = data.draw(line_edits(seed.read_bytes()), label="edit")
    with mutated(seed, None, edit) as copy:
        survived(sandbox.call("tokenizer", backend="t2t-subword", path=str(copy)), [copy.name])


@budget(30)
@given(st.data())
def test_a_damaged_dictionary_is_refused_or_read_line_for_line(survive_seeds, sandbox, data):
    seed = survive_seeds.pair / "dict.en.txt"
    edit = data.draw(line_edits(seed.read_bytes()), label="edit")
    with mutated(seed, None, edit) as copy:
        survived(sandbox.call("dictionary", path=str(copy)), [copy.name])


@budget(30)
@given(st.data())
def test_a_damaged_saved_tokenizer_is_refused_or_loads_in_range(survive_seeds, sandbox, data):
    relative = data.draw(st.sampled_from(["tokenmill-tokenizer.json", "spm.model"]), label="file")
    seed = survive_seeds.lm / relative
    edit = data.draw(json_edits(seed.read_bytes()) if relative.endswith(".json") else byte_edits(seed.stat().st_size),
                     label="edit")
    with mutated(survive_seeds.lm, relative, edit) as copy:
        survived(sandbox.call("saved_tokenizer", directory=str(copy)), [relative, "spm.model"])
