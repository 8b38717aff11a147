"""Vocabularies: fairseq dictionaries, SentencePiece models, and other subword encoders."""

from tokenmill.vocab.dictionary import Dictionary

__all__ = ["Dictionary"]
