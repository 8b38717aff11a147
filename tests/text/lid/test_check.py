"""The langid step: backends against their own libraries, labels in any form, threshold, script, language mix,
and the settings a stage key records."""

from __future__ import annotations

import numpy as np
import pytest

from tokenmill.errors import ConfigError
from tokenmill.text.filters import FilterConfig, PairFilter
from tokenmill.text.lid import LanguageCheck, label_counts, make_backend
from tokenmill.text.stats import StepStats

heliport = pytest.importorskip("heliport")
py3langid = pytest.importorskip("py3langid")

EN = ["The committee will publish its final report next spring.", "Please close the door when you leave."]
ZH = ["委员会将于明年春天发布最终报告。", "离开时请关上门。"]
DE = ["Der Ausschuss wird seinen Abschlussbericht im nächsten Frühjahr veröffentlichen."]


def test_heliport_backend_equals_heliport_line_by_line() -> None:
    lines = [*EN, *ZH, *DE, "", "12345", "ok"]
    labels, scores = make_backend("heliport").identify(lines)
    want = [heliport.Identifier().identify_with_score(line) for line in lines]
    assert labels.tolist() == [label for label, _ in want]
    assert np.allclose(scores, [score for _, score in want])


def test_py3langid_backend_confidence_is_py3langids_probability() -> None:
    from py3langid.langid import MODEL_FILE
    from py3langid.langid import LanguageIdentifier as Reference

    reference = Reference.from_model_file(MODEL_FILE, norm_probs=True)
    lines = [*EN, *ZH, *DE]
    labels, confidence = make_backend("py3langid").identify(lines)
    want = [reference.classify(line) for line in lines]
    assert labels.tolist() == [label for label, _ in want]
    assert np.allclose(confidence, [p for _, p in want], atol=1e-5)


@pytest.mark.parametrize("backend", ["heliport", "py3langid"])
@pytest.mark.parametrize(("src", "tgt"), [("en", "zh"), ("eng", "zho"), ("eng_Latn", "zho_Hans"), ("en", "cmn")])
def test_every_label_form_keeps_the_right_pairs(backend: str, src: str, tgt: str) -> None:
    result = PairFilter(FilterConfig(src_lang=src, tgt_lang=tgt, lid_backend=backend))(
        [EN[0], EN[1], DE[0], ZH[0]], [ZH[0], EN[0], ZH[1], ZH[1]])
    assert result.keep.tolist() == [True, False, False, False]
    assert result.counts["langid"] == 3


def test_the_script_of_an_nllb_label_is_checked() -> None:
    check = LanguageCheck("heliport", ["srp_Cyrl", "srp_Latn"])
    cyrillic, latin = "Сва људска бића рађају се слободна и једнака.", "Sva ljudska bića rađaju se slobodna i jednaka."
    assert check.mismatch([cyrillic, latin], 0)[0].tolist() == [False, True]
    assert check.mismatch([cyrillic, latin], 1)[0].tolist() == [True, False]


def test_threshold_drops_unsure_lines() -> None:
    lines = [EN[0], "Hello there"]
    _, scores = make_backend("heliport").identify(lines)
    cut = float(scores.min()) + 1e-3
    check = LanguageCheck("heliport", ["eng"], threshold=cut)
    bad, _ = check.mismatch(lines, 0)
    assert bad.tolist() == (scores < cut).tolist() and bad.any() and not bad.all()


def test_language_mix_is_counted_per_side_in_order_of_first_sight() -> None:
    stats = StepStats("filter")
    PairFilter(FilterConfig(src_lang="en", tgt_lang="zh"))([*EN, DE[0]], [*ZH, ZH[0]], stats=stats)
    mix = {k: v for k, v in stats.counts.items() if k.startswith("lid_")}
    assert mix == {"lid_src_eng": 2, "lid_src_deu": 1, "lid_tgt_cmn": 3}
    assert label_counts(np.array(["b", "a", "b", "c"], dtype=object)) == [("b", 2), ("a", 1), ("c", 1)]


@pytest.mark.parametrize(("settings", "message"), [
    ({"src_lang": "english"}, "not a language code"),
    ({"src_lang": "xh"}, "does not know 'xh'"),  # Xhosa: in neither model
    ({"src_lang": "en", "langid_candidates": ("en", "de")}, "py3langid backend only"),
    ({"src_lang": "en", "lid_backend": "py3langid", "langid_candidates": ("en", "qqq")}, "does not know"),
    ({"src_lang": "eng_Qqqq"}, "script"),
])
def test_bad_language_settings_are_one_clear_error(settings: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        PairFilter(FilterConfig(**settings))


def test_unknown_backend_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="known: heliport, py3langid"):
        make_backend("fasttext")


def test_stage_keys_record_the_backend_only_where_it_changes_the_output() -> None:
    assert "lid_backend" not in repr(FilterConfig())  # no language filter: the key of earlier runs
    assert "lid_backend" not in repr(FilterConfig(src_lang="en", lid_backend="py3langid"))  # what runs did before
    assert "lid_backend='heliport'" in repr(FilterConfig(src_lang="en"))  # heliport: a new key, a new run
    assert FilterConfig(src_lang="en").recorded()["lid_backend"] == "heliport"
    assert "lid_threshold=0.5" in repr(FilterConfig(src_lang="en", lid_threshold=0.5))
