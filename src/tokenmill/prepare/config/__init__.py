"""Settings of ``tokenmill prepare``: frozen sections, loadable from YAML, overridable by flags.

Names follow fairseq-preprocess (``source_lang``, ``trainpref``, ``nwordssrc`` ...) and ``spm_train``
(``vocab_size``, ``model_type``, ``character_coverage`` ...) so the flags users already know work; a YAML key is
the flag name with ``_`` for ``-``, and each key lives in one section (``vocab_size`` in
``config.tokenizer``). Unknown keys are errors.

One source of truth: a field's type hint says what it takes (``Literal`` choices, ``Annotated`` ranges; checked
by :mod:`tokenmill.settings`, the same hint gives the flag's type), its ``metadata["help"]`` is the flag's help,
and its section's ``TITLE`` the help section it is listed in. :meth:`PrepareConfig.validate` checks everything,
input files included, section by section, before any work starts.

The modules: :mod:`.kinds` (choices, names), one module per section (:mod:`.inputs`, :mod:`.cleaning`,
:mod:`.tokenizer`, :mod:`.dictionary`, :mod:`.output`, :mod:`.megatron`, :mod:`.run`, :mod:`.engine`,
:mod:`.directions`; the tokenizer backends' training sub-sections :mod:`.tokenizer_sentencepiece`,
:mod:`.tokenizer_hf`, :mod:`.tokenizer_t2t`), :mod:`.catalog` (their order and each key's place), :mod:`.model`
(``PrepareConfig``), :mod:`.loading` (``build_config``), :mod:`.values`, :mod:`.presets`, :mod:`.yaml_file` and
:mod:`.help`.
"""

from tokenmill.prepare.config.catalog import PLACES, SECTION_TYPES, SETTINGS, Setting
from tokenmill.prepare.config.cleaning import NESTED, CleaningSettings
from tokenmill.prepare.config.dictionary import DictionarySettings
from tokenmill.prepare.config.directions import DirectionSettings
from tokenmill.prepare.config.engine import EngineSettings
from tokenmill.prepare.config.help import NESTED_HELP, SECTIONS, absolute_paths, field_help, field_sections
from tokenmill.prepare.config.inputs import InputSettings
from tokenmill.prepare.config.kinds import (
    FLAG_PREFIX,
    MEGATRON_KEYS,
    RECORDED_IF_SET,
    RUN_ONLY,
    SPLITS,
    TOKENIZERS,
    LayoutName,
    Leakage,
    flag_name,
)
from tokenmill.prepare.config.loading import build_config
from tokenmill.prepare.config.megatron import MegatronSettings
from tokenmill.prepare.config.model import PrepareConfig
from tokenmill.prepare.config.output import OutputSettings
from tokenmill.prepare.config.presets import CLEAN_PRESETS, megatron_defaults, preset_defaults
from tokenmill.prepare.config.run import RunSettings
from tokenmill.prepare.config.section import BackendSettings, Section
from tokenmill.prepare.config.tokenizer import TokenizerSettings
from tokenmill.prepare.config.tokenizer_hf import HFTraining
from tokenmill.prepare.config.tokenizer_sentencepiece import SentencePieceTraining
from tokenmill.prepare.config.tokenizer_t2t import T2TTraining
from tokenmill.prepare.config.yaml_file import MAX_YAML_DEPTH, load_yaml

__all__ = [
    "CLEAN_PRESETS", "FLAG_PREFIX", "MAX_YAML_DEPTH", "MEGATRON_KEYS", "NESTED", "NESTED_HELP", "PLACES",
    "RECORDED_IF_SET", "RUN_ONLY", "SECTIONS", "SECTION_TYPES", "SETTINGS", "SPLITS", "TOKENIZERS", "BackendSettings",
    "CleaningSettings", "DictionarySettings", "DirectionSettings", "EngineSettings", "HFTraining", "InputSettings",
    "LayoutName", "Leakage", "MegatronSettings", "OutputSettings", "PrepareConfig", "RunSettings", "Section",
    "SentencePieceTraining", "Setting", "T2TTraining", "TokenizerSettings", "absolute_paths", "build_config",
    "field_help", "field_sections", "flag_name", "load_yaml", "megatron_defaults", "preset_defaults",
]
