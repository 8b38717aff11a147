"""The Megatron section: tools/preprocess_data.py's flags, which mean Megatron's defaults (see
:func:`~tokenmill.prepare.config.loading.megatron_defaults`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from tokenmill.errors import ConfigError
from tokenmill.prepare.config.kinds import MegatronTokenizer
from tokenmill.prepare.config.section import Section
from tokenmill.text.sentences import DEFAULT_SPLITTER, check_installed, language_code

if TYPE_CHECKING:
    from tokenmill.prepare.config.model import PrepareConfig


def refuse_llama2(tokenizer_type: object) -> None:
    """Megatron's Llama2Tokenizer: one error with the flags that give its ids."""
    if tokenizer_type == "Llama2Tokenizer":
        raise ConfigError(
            "--tokenizer-type Llama2Tokenizer: use --tokenizer-type SentencePieceTokenizer --tokenizer-model "
            "tokenizer.model (the same SentencePiece ids; Megatron's Llama2Tokenizer also puts a BOS id before "
            "each document, which tokenmill does not add)")


@dataclass(frozen=True)
class MegatronSettings(Section):
    """Megatron's preprocess_data names for the input, the output and the tokenizer."""

    TITLE: ClassVar[str] = "megatron (tools/preprocess_data.py's flags)"

    input: list[str] = field(
        default_factory=list,
        metadata={"help": "Megatron's --input: JSONL (or Parquet, Arrow, a save_to_disk folder) files or globs, "
                          "comma-separated (monolingual; --json-keys picks the text)."},
    )
    output_prefix: str | None = field(
        default=None,
        metadata={"help": "Megatron's --output-prefix: writes {output_prefix}_{key}_document.bin/.idx in the Megatron"
                          " layout, ids of the tokenizer itself, nothing cleaned unless a cleaning flag asks for it."},
    )
    tokenizer_type: MegatronTokenizer | None = field(
        default=None,
        metadata={"help": "Megatron's --tokenizer-type (HuggingFaceTokenizer, TikTokenizer, SentencePieceTokenizer, "
                          "GPT2BPETokenizer)."},
    )
    vocab_file: str | None = field(
        default=None,
        metadata={"help": "Megatron's --vocab-file: GPT2BPETokenizer's vocab.json."},
    )
    merge_file: str | None = field(
        default=None,
        metadata={"help": "Megatron's --merge-file: GPT2BPETokenizer's merges.txt."},
    )
    split_sentences: bool = field(
        default=False,
        metadata={"help": "Megatron's --split-sentences: each document's sentences are its sequences in the .idx "
                          "(documents are the document index; EOD after the last one), written as "
                          "{output_prefix}_{key}_sentence.bin/.idx (pip install 'tokenmill[sentences]')."},
    )
    lang: str = field(
        default="english",
        metadata={"help": "Megatron's --lang: the language of --split-sentences, an NLTK name (english, german ...) "
                          "or an ISO 639 code (en, de, pt-BR)."},
    )
    keep_newlines: bool = field(
        default=False,
        metadata={"help": "Megatron's --keep-newlines: with --split-sentences a sentence keeps the whitespace after "
                          "it (newlines too); else sentences are stripped. Documents always keep theirs."},
    )
    sentence_splitter: str = field(
        default=DEFAULT_SPLITTER,
        metadata={"help": "The sentence splitter of --split-sentences (registered in tokenmill.text.sentences)."},
    )

    def checked(self, config: PrepareConfig) -> MegatronSettings:
        """The tokenizer flags name a usable tokenizer and files that exist; --input and --output-prefix come
        together and make one monolingual dataset."""
        refuse_llama2(self.tokenizer_type)
        for name in ("vocab_file", "merge_file"):
            path = getattr(self, name)
            if path and not Path(path).is_file():
                raise ConfigError(f"{config.label(name)}: {path}: no such file")
        if self.tokenizer_type == "GPT2BPETokenizer" and not (self.vocab_file and self.merge_file):
            raise ConfigError("--tokenizer-type GPT2BPETokenizer needs --vocab-file (vocab.json) and --merge-file")
        self._check_model_given(config)
        if bool(self.vocab_file) != bool(self.merge_file):
            raise ConfigError("--vocab-file and --merge-file come together (GPT-2's vocab.json and merges.txt)")
        if self.vocab_file and config.tokenizer.name != "hf":
            raise ConfigError("--vocab-file/--merge-file make a GPT-2 byte-level BPE: use --tokenizer hf "
                              "(or --tokenizer-type GPT2BPETokenizer)")
        self._check_dataset(config)
        self._check_sentences(config)
        return self

    def _check_model_given(self, config: PrepareConfig) -> None:
        """--tokenizer-type loads a model, as in Megatron, which refuses to run without one: never train a new
        tokenizer in its place (that would give other ids than the model the user trains with)."""
        tokenizer = config.tokenizer
        if not self.tokenizer_type or self.tokenizer_type == "GPT2BPETokenizer":
            return
        if not (tokenizer.tokenizer_model or tokenizer.spm_model):
            raise ConfigError(
                f"--tokenizer-type {self.tokenizer_type} needs --tokenizer-model (the model whose ids the data "
                "must have, as Megatron's preprocess_data requires); to train a new tokenizer on this input "
                "instead, drop --tokenizer-type and give --tokenizer sentencepiece or hf with --vocab-size")

    def _check_sentences(self, config: PrepareConfig) -> None:
        """--split-sentences: Megatron's flags, a tokenizer model, one store, the splitter installed."""
        if not self.split_sentences:
            return
        if not self.output_prefix:
            raise ConfigError("--split-sentences comes with Megatron's --input and --output-prefix")
        if config.tokenizer.name == "none":
            raise ConfigError("--split-sentences needs a tokenizer model (--tokenizer-type/--tokenizer-model), "
                              "not --tokenizer none")
        if config.output.shard_size:
            raise ConfigError("--split-sentences writes one store, as Megatron does: drop --shard-size")
        if config.inputs.documents != "line":
            raise ConfigError("--split-sentences reads one document per JSON row: drop --documents blank-line")
        language_code(self.lang)
        check_installed(self.sentence_splitter)

    def _check_dataset(self, config: PrepareConfig) -> None:
        """--input and --output-prefix: one monolingual dataset."""
        if not (self.output_prefix or self.input):
            return
        if not self.output_prefix:
            raise ConfigError("--input comes with --output-prefix (Megatron's preprocess_data flags)")
        if not config.inputs.monolingual or config.inputs.validpref or config.inputs.testpref:
            raise ConfigError(
                "--output-prefix writes one Megatron dataset from --input: no --target-lang, --validpref or "
                "--testpref (Megatron splits one dataset by --split at training time)"
            )
