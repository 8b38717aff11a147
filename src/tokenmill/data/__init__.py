"""Datasets over the token store: translation pairs, many directions sampled by temperature, packed
GPT samples, weighted blends."""

from tokenmill.data.blending import BlendedDataset, build_blending_indices, normalize_weights, split_document_ranges
from tokenmill.data.gpt_dataset import GPTDataset, GPTDatasetConfig
from tokenmill.data.gpt_index import GPTIndexConfig, build_gpt_index
from tokenmill.data.multi_langtok import LangTokConfig
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.data.sampling import SamplingConfig, SamplingPlan

__all__ = [
    "BlendedDataset",
    "GPTDataset",
    "GPTDatasetConfig",
    "GPTIndexConfig",
    "LangTokConfig",
    "MultiPairDataset",
    "SamplingConfig",
    "SamplingPlan",
    "build_blending_indices",
    "build_gpt_index",
    "normalize_weights",
    "split_document_ranges",
]
