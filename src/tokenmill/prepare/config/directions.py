"""The directions section: many language directions prepared at once with one SentencePiece model and one
dictionary (Open-NLLB's data_bin/shardNNN layout)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from tokenmill.errors import ConfigError
from tokenmill.prepare.config.files import check_inputs
from tokenmill.prepare.config.kinds import DIRECTION_NAME, SPLITS, AtLeast1
from tokenmill.prepare.config.section import Section
from tokenmill.settings import Range

if TYPE_CHECKING:
    from tokenmill.prepare.config.model import PrepareConfig


@dataclass(frozen=True)
class DirectionSettings(Section):
    """The directions (``files``: the ``--directions`` setting, name -> its prefixes) and how they share."""

    TITLE: ClassVar[str] = "many directions at once (Open-NLLB's data_bin/shardNNN layout)"

    files: dict[str, Any] = field(
        default_factory=dict,
        metadata={"key": "directions",
                  "help": "Language directions prepared together with one SentencePiece model and one dictionary, "
                          "e.g. eng_Latn-tur_Latn,eng_Latn-zho_Hans: files at {trainpref}.{direction}.{lang} (and "
                          "valid/test alike); in YAML also a mapping direction -> {trainpref, validpref, testpref} of"
                          " its own prefixes."},
    )
    num_shards: Annotated[int, AtLeast1] = field(
        default=1,
        metadata={"help": "Many directions: split each direction's train into this many shardNNN/ folders (fewer for "
                          "directions with fewer pairs); valid/test go to shard000."},
    )
    spm_temperature: Annotated[float, Range(0, open_low=True)] = field(
        default=1.0,
        metadata={"help": "Many directions: SentencePiece's training sample takes language l's lines in proportion to"
                          " n_l^(1/T), so small languages keep their characters (1: as they come; 5: NLLB-like)."},
    )
    lang_token_format: str = field(
        default="__{lang}__",
        metadata={"help": "Many directions: language tokens added to the shared dictionary, one per language."},
    )
    retrain_tokenizer: bool = field(
        default=False,
        metadata={"help": "Many directions: train SentencePiece again when directions were added (by default the "
                          "model trained on the first directions is kept and only the new directions are encoded)."},
    )

    def checked(self, config: PrepareConfig) -> DirectionSettings:
        """With directions: each is 'src-tgt' with training files, and no setting of a one-direction run is
        given (the single-direction sections are checked per direction when each runs)."""
        if not self.files:
            return self
        for name, files in self.files.items():
            _check_direction(name, files)
        wrong = [flag for flag, bad in _one_direction_settings(config) if bad]
        if wrong:
            raise ConfigError("with --directions these settings do not apply: " + "; ".join(wrong))
        if "{lang}" not in self.lang_token_format or any(c.isspace() for c in self.lang_token_format):
            raise ConfigError(
                f"--lang-token-format {self.lang_token_format!r} must contain {{lang}} and no spaces "
                "(e.g. __{lang}__)"
            )
        return self

    def check_files(self, config: PrepareConfig) -> None:
        """Every direction's ``{prefix}.{lang}`` files exist."""
        for name, files in self.files.items():
            langs = name.split("-")
            for split in SPLITS:
                try:
                    check_inputs(f"--{split}pref", files.get(f"{split}pref") or [], langs)
                except ConfigError as error:
                    raise ConfigError(f"direction {name}: {error}") from None


def _check_direction(name: str, files: dict[str, Any]) -> None:
    if not DIRECTION_NAME.fullmatch(name):
        raise ConfigError(
            f"direction {name!r} is not 'src-tgt' (two different language codes of letters, digits and '_', "
            "e.g. eng_Latn-tur_Latn)"
        )
    src, tgt = name.split("-")
    if src == tgt:
        raise ConfigError(f"direction {name!r}: source and target language are the same")
    if not files.get("trainpref"):
        raise ConfigError(f"direction {name}: no training files (give trainpref for it, or a global --trainpref)")


def _one_direction_settings(config: PrepareConfig) -> list[tuple[str, bool]]:
    """(flag, whether it is given) for the settings a many-direction run refuses."""
    inputs = config.inputs
    return [
        ("--tokenizer other than sentencepiece", config.tokenizer.name != "sentencepiece"),
        ("--input-format other than text", inputs.input_format != "text"),
        ("--source-lang/--target-lang (the directions name them)", bool(inputs.source_lang or inputs.target_lang)),
        ("--shard-size (use --num-shards)", bool(config.output.shard_size)),
        ("--align-suffix", bool(inputs.align_suffix)),
        ("--srcdict/--tgtdict (the shared dictionary is built from the SentencePiece model)",
         bool(config.dictionary.srcdict or config.dictionary.tgtdict)),
        ("--no-joint-spm", not config.tokenizer.joint_spm),
    ]
