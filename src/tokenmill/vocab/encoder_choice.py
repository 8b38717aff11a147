"""Which encoder an encode stage runs (``--encoder auto|reference|fast``), and the check that earns the fast
one its place.

* ``reference``: the tokenizer's own library, always.
* ``auto`` (the default): the fast encoder (:mod:`tokenmill.vocab.fast_encoder`) when it supports the
  model and is installed, proven on the stage's own documents (:mod:`tokenmill.vocab.encoder_check`): when
  the sample's ids differ, the stage is encoded again by the reference library, one ``warning:`` line says
  so, and the record says why. Without support or without the library, the reference library runs.
* ``fast``: the fast encoder or one error (not installed, model not supported, or the check failed).

The ids are the reference's in every case, so the choice is no part of any stage key; the stage's record
(:meth:`EncoderChoice.record`) says which encoder ran and what the check found::

    choice = choose_encoder(tokenizer, "auto", check_docs=1000, seed=1)
    result, record = run_checked(choice, lambda c: encode_stage(c.encoder, c.tap), warn, threads)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

from tokenmill.errors import ConfigError
from tokenmill.vocab.encoder_check import CheckResult, CheckSample, check_sample
from tokenmill.vocab.fast_encoder import FastEncoder, Unsupported, fast_encoder
from tokenmill.vocab.tokenizer import Tokenizer

log = logging.getLogger(__name__)

EncoderMode = Literal["auto", "reference", "fast"]
T = TypeVar("T")


@dataclass
class EncoderChoice:
    """The encoder one encode stage runs, the sample that will prove it, and why the reference runs when
    it does."""

    mode: str
    reference: Tokenizer | None
    fast: FastEncoder | None = None
    sample: CheckSample | None = None
    why_reference: str | None = None
    result: CheckResult | None = None

    @property
    def encoder(self) -> Tokenizer | None:
        """What encodes the stage: the fast encoder, else the reference tokenizer."""
        return self.fast if self.fast is not None else self.reference  # type: ignore[return-value]

    def tap(self, chunks: Iterable[Sequence[str]]) -> Iterator[Sequence[str]]:
        """The stage's chunks of documents, sampled on their way when the fast encoder runs."""
        return self.sample.tap(chunks) if self.sample is not None else iter(chunks)

    def check(self, num_threads: int) -> bool:
        """Run the check (fast encoder only): True when the sample matched. ``--encoder fast`` raises instead
        of returning False."""
        if self.fast is None or self.sample is None:
            return True
        self.result = check_sample(self.reference, self.fast, self.sample.documents(), num_threads)  # type: ignore[arg-type]
        if self.result.matched:
            log.info("%s matched %s on %d sampled documents", self.fast.library, self.reference.name,
                     self.result.documents)  # type: ignore[union-attr]
            return True
        if self.mode == "fast":
            raise ConfigError(f"--encoder fast: {self.mismatch()}; use --encoder reference (or auto) for this model")
        return False

    def mismatch(self) -> str:
        result = self.result
        assert result is not None and self.fast is not None
        return (f"{self.fast.library} gave other ids than {self.reference.name} on {result.mismatches} of "  # type: ignore[union-attr]
                f"{result.documents} sampled documents (first: document {result.first_mismatch + 1})")  # type: ignore[operator]

    def fallback(self) -> EncoderChoice:
        """The same stage with the reference library, saying why."""
        return replace(self, fast=None, sample=None, why_reference=self.mismatch())

    def record(self) -> dict[str, Any]:
        """Which encoder ran and the check's result, for the stage record and the manifest."""
        if self.fast is not None:
            return {"mode": self.mode, "encoder": self.fast.library, "check": self.result and self.result.record()}
        out: dict[str, Any] = {"mode": self.mode, "encoder": "reference"}
        if self.why_reference:
            out["why"] = self.why_reference
        if self.result is not None:
            out["check"] = self.result.record()
        return out


def choose_encoder(reference: Tokenizer | None, mode: str, *, check_docs: int, seed: int) -> EncoderChoice:
    """The encoder of a stage whose tokenizer is ``reference`` (None: whitespace words, no tokenizer)."""
    if mode not in ("auto", "reference", "fast"):
        raise ConfigError(f"--encoder must be auto, reference or fast, not {mode!r}")
    if reference is None and mode == "fast":
        raise ConfigError("--encoder fast: whitespace words (--tokenizer none) have no fast encoder; "
                          "use --encoder auto or reference")
    if mode == "reference" or reference is None:
        return EncoderChoice(mode, reference)
    try:
        fast = fast_encoder(reference)
    except Unsupported as why:
        if mode == "fast":
            raise ConfigError(f"--encoder fast: {why}; use --encoder auto or reference") from None
        log.info("encoder: %s runs (%s)", reference.name, why)
        return EncoderChoice(mode, reference, why_reference=str(why))
    return EncoderChoice(mode, reference, fast, CheckSample(check_docs, seed, fast.special_texts))


def run_checked(choice: EncoderChoice, run: Callable[[EncoderChoice], T], warn: Callable[[str], None],
                num_threads: int) -> tuple[T, dict[str, Any]]:
    """``run(choice)``, then the check; when the sample's ids differ (``auto``), one warning and
    ``run`` again with the reference library. Returns what the kept run returned and the record."""
    result = run(choice)
    if not choice.check(num_threads):
        choice = choice.fallback()
        warn(f"{choice.why_reference}: encoded with {choice.reference.name} instead")  # type: ignore[union-attr]
        result = run(choice)
    return result, choice.record()
