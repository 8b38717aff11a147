"""Language tags as tokens, per translation direction (fairseq's multilingual ``--encoder-langtok`` /
``--decoder-langtok``, as Open-NLLB trains).

A tag is a dictionary token such as ``__eng_Latn__``. The encoder tag goes first in every source
sentence (the source language's tag with ``encoder_langtok="src"``, NLLB's choice, or the target
language's with ``"tgt"``); the decoder tag, the target language's, goes first in every target
sentence, so the decoder input (``prev_output_tokens``) starts ``</s> __tgt__ ...``. Both are
fairseq's ``PrependTokenDataset`` and are applied through :class:`~tokenmill.data.pairs.PairOptions`
(``prepend_src`` / ``prepend_tgt``), which counts them in lengths and in the length filter.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from tokenmill.data.pairs import PairOptions
from tokenmill.errors import ConfigError
from tokenmill.vocab.dictionary import Dictionary

ENCODER_CHOICES = ("src", "tgt", None)


@dataclass(frozen=True)
class LangTokConfig:
    """Which language tags are put in front of each direction's sentences, and how they are spelled.

    The defaults are NLLB's (source tag on the encoder side, target tag on the decoder side);
    fairseq's ``translation_multi_simple_epoch`` defaults are ``encoder_langtok=None``,
    ``decoder_langtok=False``.
    """

    encoder_langtok: str | None = "src"
    """``"src"``: the source language's tag first in the source; ``"tgt"``: the target language's
    tag there (fairseq's ``--encoder-langtok tgt``); None: no source tag."""
    decoder_langtok: bool = True
    """Put the target language's tag first in the target (fairseq's ``--decoder-langtok``)."""
    template: str = "__{lang}__"
    """How a language code becomes a token: ``{lang}`` is replaced by the code (fairseq's
    ``multilingual`` style; mBART's is ``[{lang}]``)."""

    def __post_init__(self) -> None:
        if self.encoder_langtok not in ENCODER_CHOICES:
            raise ConfigError(f"encoder_langtok must be 'src', 'tgt' or None, got {self.encoder_langtok!r}")
        if "{lang}" not in self.template:
            raise ConfigError(f"langtok template {self.template!r} must contain '{{lang}}' (e.g. '__{{lang}}__')")

    @property
    def active(self) -> bool:
        """Whether any tag is added."""
        return self.encoder_langtok is not None or self.decoder_langtok

    def token(self, lang: str) -> str:
        """The tag of language ``lang``, e.g. ``__eng_Latn__``."""
        return self.template.replace("{lang}", lang)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def options_for(
        self,
        base: PairOptions,
        src: str,
        tgt: str,
        src_dict: Dictionary | None,
        tgt_dict: Dictionary | None,
    ) -> PairOptions:
        """``base`` with this direction's tags as ``prepend_src`` / ``prepend_tgt``.

        The encoder tag is looked up in the source dictionary and the decoder tag in the target
        one; a tag that is missing is a :class:`ConfigError` naming the direction and the token.
        """
        direction = f"{src}-{tgt}"
        changes: dict[str, int] = {}
        if self.encoder_langtok is not None:
            if base.prepend_src is not None:
                raise ConfigError(
                    f"direction {direction}: options already prepend token {base.prepend_src} to the source and "
                    "encoder_langtok asks for a language tag there; use one of them"
                )
            lang = src if self.encoder_langtok == "src" else tgt
            changes["prepend_src"] = _lookup(src_dict, self.token(lang), direction, "source")
        if self.decoder_langtok:
            if base.prepend_tgt is not None:
                raise ConfigError(
                    f"direction {direction}: options already prepend token {base.prepend_tgt} to the target and "
                    "decoder_langtok asks for a language tag there; use one of them"
                )
            changes["prepend_tgt"] = _lookup(tgt_dict, self.token(tgt), direction, "target")
        return dataclasses.replace(base, **changes) if changes else base


def _lookup(dictionary: Dictionary | None, token: str, direction: str, side: str) -> int:
    if dictionary is None:
        raise ConfigError(
            f"direction {direction}: language token {token} needs the {side} dictionary (dict.*.txt), "
            "which was not found next to the data"
        )
    if token not in dictionary:
        raise ConfigError(
            f"direction {direction}: language token {token} is not in the {side} dictionary; prepare the data "
            "with language tokens in the dictionary, or change the langtok template / turn the tag off"
        )
    return dictionary.indices[token]
