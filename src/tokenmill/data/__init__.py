"""Datasets over the token store: translation pairs, many directions sampled by temperature, packed
GPT samples, weighted blends."""

from tokenmill.data.blending import BlendedDataset, build_blending_indices, normalize_weights, split_document_ranges
from tokenmill.data.gpt_dataset import GPTDataset, GPTDatasetConfig
from tokenmill.data.gpt_index import GPTIndexConfig, build_gpt_index
from tokenmill.data.index_cache import IndexCache
from tokenmill.data.multi_langtok import LangTokConfig
from tokenmill.data.multi_pairs import MultiCollate, MultiPairDataset
from tokenmill.data.multi_planner import SampledPlanner, multilingual_batches
from tokenmill.data.sampling import SamplingConfig, SamplingPlan

__all__ = [
    "BlendedDataset",
    "GPTDataset",
    "GPTDatasetConfig",
    "GPTIndexConfig",
    "IndexCache",
    "LangTokConfig",
    "MultiCollate",
    "MultiPairDataset",
    "SampledPlanner",
    "SamplingConfig",
    "SamplingPlan",
    "build_blending_indices",
    "build_gpt_index",
    "multilingual_batches",
    "normalize_weights",
    "split_document_ranges",
]
