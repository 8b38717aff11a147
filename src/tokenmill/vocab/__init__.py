"""Vocabularies: fairseq dictionaries, SentencePiece models, and T2T's SubwordTextEncoder."""

from tokenmill.vocab.dictionary import Dictionary
from tokenmill.vocab.t2t_subword import SubwordTextEncoder

__all__ = ["Dictionary", "SubwordTextEncoder"]
