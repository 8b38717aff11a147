"""Token stores and prepared directories survive any damage: a mutated ``.idx``/``.bin``/``dict``/manifest
gives one tokenmill error naming the file, or opens and serves exactly what its bytes say (and fails
``verify`` when those are not the ids prepare wrote). Reads run in a child interpreter
(``tests/survive``), under a fixed hypothesis budget and seed."""

from __future__ import annotations

import json
import shutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tokenmill
from tests.survive.harness import budget, mutated, survived
from tests.survive.mutations import byte_edits, idx_edits, json_edits, line_edits
from tokenmill.errors import FormatError
from tokenmill.store.manifest import ManifestHints, read_manifest, read_manifest_hints, verify_directory

PAIR_FILES = ["train.en-de.en.idx", "train.en-de.de.bin", "dict.en.txt", "manifest.json"]
LM_FILES = ["train.idx", "train.bin", "dict.txt", "manifest.json"]
SEED_DIGESTS: dict[str, str] = {}
"""What the unmutated seed directory serves, computed once."""


def edits_for(path) -> st.SearchStrategy:
    data = path.read_bytes()
    if path.suffix == ".idx":
        return idx_edits(data) | byte_edits(len(data))
    if path.suffix == ".json":
        return json_edits(data)
    if path.suffix == ".txt":
        return line_edits(data)
    return byte_edits(len(data))


@budget(50)
@given(st.data())
def test_a_damaged_store_is_refused_or_read_as_its_bytes_say(survive_seeds, sandbox, data):
    layout = data.draw(st.sampled_from(["fairseq", "megatron"]), label="layout")
    directory, prefix = ((survive_seeds.pair, "train.en-de.en") if layout == "fairseq" else
                         (survive_seeds.lm, "train"))
    suffix = data.draw(st.sampled_from([".idx", ".bin"]), label="file")
    edit = data.draw(edits_for(directory / (prefix + suffix)), label="edit")
    with mutated(directory, prefix + suffix, edit) as copy:
        survived(sandbox.call("store", prefix=str(copy / prefix)), [prefix])
        if layout == "megatron":
            survived(sandbox.call("gpt", prefix=str(copy / prefix)), [prefix])


@budget(36)
@given(st.data())
def test_a_damaged_directory_opens_honestly_or_not_at_all(survive_seeds, sandbox, data):
    kind = data.draw(st.sampled_from(["pair", "pair", "lm"]), label="directory")
    seed, files, store = ((survive_seeds.pair, PAIR_FILES, "train.en-de.en") if kind == "pair" else
                          (survive_seeds.lm, LM_FILES, "train"))
    relative = data.draw(st.sampled_from(files), label="file")
    edit = data.draw(edits_for(seed / relative), label="edit")
    if str(seed) not in SEED_DIGESTS:
        SEED_DIGESTS[str(seed)] = sandbox.call("seed_digest", directory=str(seed))["digest"]
    digest = SEED_DIGESTS[str(seed)]
    names = [relative, relative.removesuffix(".idx").removesuffix(".bin"), seed.name]
    changed = edit.apply((seed / relative).read_bytes()) != (seed / relative).read_bytes()
    with mutated(seed, relative, edit) as copy:
        survived(sandbox.call("open", directory=str(copy), seed_digest=digest,
                              data_changed=relative != "manifest.json"), names)
        survived(sandbox.call("verify", directory=str(copy)), names)
        for args in (["verify", str(copy)], ["inspect", str(copy / store), "--range", "0:3"],
                     ["batches", str(copy), "--max-tokens", "64"]):
            answer = survived(sandbox.call("cli", args=args), names)
            if answer["status"] == "ok" and args[0] == "verify" and changed and relative != "manifest.json":
                assert answer["code"] != 0, f"verify passed a directory whose {relative} changed ({edit})"


# ------------------------------------------------------------------ the defects these found, one test each
def test_a_manifest_nested_too_deep_is_a_format_error(survive_seeds, tmp_path):
    """deep-json of manifest.json: json.loads raised RecursionError out of read_manifest (and the hints)."""
    directory = tmp_path / "pair"
    shutil.copytree(survive_seeds.pair, directory)
    (directory / "manifest.json").write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(FormatError, match=r"manifest\.json: not valid JSON"):
        read_manifest(directory)
    assert read_manifest_hints(directory) == ManifestHints()
    assert any("not valid JSON" in problem for problem in verify_directory(directory))


@pytest.mark.parametrize("change", [{"settings": True}, {"summary": [1]}, {"files": {"dict.en.txt": [1]}},
                                    {"stores": {"train.en-de.en": "x"}}])
def test_a_manifest_part_of_the_wrong_type_is_a_format_error(survive_seeds, tmp_path, change):
    """set['settings']=True in manifest.json: tokenmill.open raised AttributeError ('bool' has no 'get')."""
    directory = tmp_path / "pair"
    shutil.copytree(survive_seeds.pair, directory)
    manifest = directory / "manifest.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), **change}))
    with pytest.raises(FormatError, match=r"manifest\.json: manifest (field|entry) .* is not a JSON object"):
        tokenmill.open(directory)
    assert any("is not a JSON object" in problem for problem in verify_directory(directory))
