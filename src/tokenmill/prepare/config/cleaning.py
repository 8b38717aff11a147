"""The cleaning section: Unicode clean-up, pair filters, de-duplication, leakage and decontamination."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, ClassVar

from tokenmill.errors import ConfigError
from tokenmill.prepare.config.kinds import AtLeast0, AtLeast1, CleanPreset, Leakage, NearDedupSides
from tokenmill.prepare.config.section import Section
from tokenmill.settings import check_settings, did_you_mean
from tokenmill.text.charclass import script_table
from tokenmill.text.filters import FilterConfig
from tokenmill.text.filters.registry import LM_RULES
from tokenmill.text.normalize import Normalizer

if TYPE_CHECKING:
    from tokenmill.prepare.config.model import PrepareConfig

NESTED: dict[str, type] = {"normalize": Normalizer, "filters": FilterConfig}
"""The settings that are mappings of their own settings (a class of :mod:`tokenmill.text` each)."""


@dataclass(frozen=True)
class CleaningSettings(Section):
    """What is cleaned, filtered and dropped before tokenizing."""

    TITLE: ClassVar[str] = "cleaning"

    normalize: Normalizer = field(
        default_factory=Normalizer,
        metadata={"help": "Unicode clean-up: nfkc, fullwidth, remove_control, collapse_whitespace."},
    )
    filters: FilterConfig = field(
        default_factory=FilterConfig,
        metadata={"help": "Pair filters applied to train (and, with --filter-heldout, to valid/test)."},
    )
    filter_heldout: bool = field(
        default=False,
        metadata={"help": "Apply the filters to valid/test too (by default they are only normalized)."},
    )
    dedup: bool = field(
        default=True,
        metadata={"help": "Drop exact duplicate training pairs (the first occurrence is kept)."},
    )
    leakage: Leakage = field(
        default="pair",
        metadata={"help": "Drop training pairs that also appear in valid/test: the same pair, source, target, either "
                          "side, or off."},
    )
    clean_preset: CleanPreset | None = field(
        default=None,
        metadata={"help": "Turn on a set of filters: bitext = bicleaner-hardrules' model-free rules and OpusFilter's "
                          "numeral, punctuation, HTML, repetition and common-substring filters at their tools' "
                          "thresholds; web = the LM document filters gopher_quality, gopher_repetition, c4 and "
                          "fineweb (filters you give yourself win; see docs/how-to/cleaning.md)."},
    )
    lm_filters: list[str] = field(
        default_factory=list,
        metadata={"help": "LM document filters to turn on (monolingual input), comma-separated: gopher_quality, "
                          "gopher_repetition, c4, fineweb, at datatrove's thresholds (each settable: "
                          "--filter-gopher-min-words ...; see docs/how-to/cleaning.md)."},
    )
    decontaminate: list[str] = field(
        default_factory=list,
        metadata={"help": "Drop training items that share a word n-gram with any of these text files (e.g. a FLORES "
                          "or WMT test set, one segment per line), either side of a pair; comma-separated."},
    )
    decontaminate_ngram: Annotated[int, AtLeast1] = field(
        default=13,
        metadata={"help": "Words per n-gram of --decontaminate (a line with fewer words is compared whole)."},
    )
    near_dedup: bool = field(
        default=False,
        metadata={"help": "Drop near-duplicate training items (MinHash + LSH over word n-grams): of each cluster "
                          "of near-duplicates the item that comes first in the input is kept "
                          "(docs/how-to/near-duplicates.md)."},
    )
    near_dedup_ngram: Annotated[int, AtLeast1] = field(
        default=5,
        metadata={"help": "Words per shingle of --near-dedup (an item with fewer words is one shingle)."},
    )
    near_dedup_bands: Annotated[int, AtLeast1] = field(
        default=14,
        metadata={"help": "LSH bands of --near-dedup (permutations = bands x rows; more bands: more pairs found)."},
    )
    near_dedup_rows: Annotated[int, AtLeast1] = field(
        default=8,
        metadata={"help": "MinHash values per LSH band of --near-dedup (more rows: only closer pairs meet)."},
    )
    near_dedup_seed: Annotated[int, AtLeast0] = field(
        default=1,
        metadata={"help": "Seed of --near-dedup's MinHash permutations."},
    )
    near_dedup_sides: NearDedupSides = field(
        default="both",
        metadata={"help": "Which side of a pair --near-dedup compares: both (the pair as one item), src or tgt "
                          "(monolingual data: the document)."},
    )

    def check_types(self, config: PrepareConfig) -> None:
        """The section's own settings and those of its nested groups (``normalize.nfkc``, ``filters.max_ratio``)."""
        super().check_types(config)
        for group, kind in NESTED.items():
            check_settings(kind, getattr(self, group), lambda name, g=group: config.label(f"{g}.{name}"))
        self._check_lm_filters(config)

    def checked(self, config: PrepareConfig) -> CleaningSettings:
        """--near-dedup-sides tgt needs a target side."""
        if self.near_dedup:
            if config.monolingual and self.near_dedup_sides == "tgt":
                raise ConfigError("--near-dedup-sides tgt needs a target side (--target-lang): use src or both")
        return self

    def _check_lm_filters(self, config: PrepareConfig) -> None:
        """The LM document filters: known names, and documents to filter (no target side)."""
        for name in self.lm_filters:
            if name not in LM_RULES:
                raise ConfigError(f"{config.label('lm_filters')}: unknown filter {name!r}"
                                  f"{did_you_mean(name, LM_RULES)}; choose from {', '.join(LM_RULES)}")
        on = [name for name in LM_RULES if getattr(self.filters, name)]
        if on and (config.inputs.target_lang or config.multilingual):
            given = [name for name in on if name in self.lm_filters]
            where = (config.label("lm_filters") if given else config.label("clean_preset")
                     if self.clean_preset == "web" else config.label(f"filters.{on[0]}"))
            raise ConfigError(f"{where}: the LM document filters ({', '.join(on)}) filter "
                              "monolingual documents; leave out --target-lang, or use --clean-preset bitext for pairs")

    def check_files(self, config: PrepareConfig) -> None:
        """The scripts of the script filters exist."""
        for name in ("src_script", "tgt_script"):
            script = getattr(self.filters, name)
            if script is not None:
                try:
                    script_table(script)
                except ConfigError as error:
                    raise ConfigError(f"{config.label('filters.' + name)}: {error}") from None
