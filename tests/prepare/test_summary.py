"""The printed summary's stage-times line: one entry per kind of stage, and whose seconds they are."""

from __future__ import annotations

from pathlib import Path

from tokenmill.prepare.run.summary import PrepareSummary, stage_kind


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
