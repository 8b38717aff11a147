"""The printed summary's stage-times line: one entry per kind of stage, and whose seconds they are."""

from __future__ import annotations

from pathlib import Path

from tokenmill.prepare.run.summary import PrepareSummary, cleaning_lines, stage_kind


def test_stage_kinds_sum_splits_languages_and_directions():
    assert stage_kind("encode.train.en") == "encode"
    assert stage_kind("eng_Latn-deu_Latn.clean.train") == "clean"
    assert stage_kind("tokenizer") == "tokenizer"


def test_many_directions_give_one_entry_per_kind_and_say_what_ran_now():
    summary = PrepareSummary(Path("out"))
    for direction in ("eng_Latn-deu_Latn", "eng_Latn-rus_Cyrl", "eng_Latn-hin_Deva"):
        for stage in ("clean.train", "clean.valid", "encode.train.eng_Latn", "binarize.train.eng_Latn"):
            summary.stage_seconds[f"{direction}.{stage}"] = 1.0
    summary.stage_seconds["tokenizer"] = 5.0
    summary.ran = [name for name in summary.stage_seconds if "hin_Deva" in name]
    line = summary.stage_line()
    assert line == ("stage times (4.0s in 4 stages this run; 9 up to date, their times from the run that made them): "
                    "clean 6.0s (2 of 6 ran), encode 3.0s (1 of 3 ran), binarize 3.0s (1 of 3 ran), "
                    "tokenizer 5.0s (up to date)")


def test_a_preset_of_filters_that_dropped_nothing_is_counted_not_listed():
    filters = {"pairs": 345, "dropped_empty": 1, **{f"dropped_rule{i}": 0 for i in range(20)}, "dropped_langid": 8,
               "kept": 336}
    line = cleaning_lines("train", {"read": {"read": 345}, "filter": filters})[1]
    assert line == ("train filter: pairs 345, dropped_empty 1 (0.3%), dropped_langid 8 (2.3%), kept 336 (97.4%), "
                    "20 more filters dropped none")
    few = cleaning_lines("train", {"read": {"read": 10}, "filter": {"pairs": 10, "dropped_ratio": 0, "kept": 10}})[1]
    assert few == "train filter: pairs 10, dropped_ratio 0 (0.0%), kept 10 (100.0%)"  # a few zeros stay listed
