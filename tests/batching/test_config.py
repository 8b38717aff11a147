"""BatchConfig: validation with messages that name the setting."""

from __future__ import annotations

import pytest

from tokenmill.batching.config import BatchConfig
from tokenmill.errors import ConfigError


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"mode": "bucketed"}, "mode 'bucketed' is unknown"),
        ({"max_tokens": None, "max_sentences": None}, "needs max_tokens or max_sentences"),
        ({"max_tokens": 0}, "max_tokens must be a positive integer"),
        ({"required_batch_size_multiple": 0}, "required_batch_size_multiple must be an integer >= 1"),
        ({"seed": -1}, "seed must be an integer"),
        ({"sample_buffer_size": -2}, "sample_buffer_size must be -1, 0 or a positive integer"),
        ({"batch_penalty": -0.1}, "batch_penalty must be a number in \\[0, 1\\]"),
        ({"batch_penalty": "0.1"}, "batch_penalty must be a number"),
        ({"plan_threads": 0}, "plan_threads must be an integer >= 1"),
    ],
)
def test_bad_settings_name_the_field(changes, message):
    with pytest.raises(ConfigError, match=message):
        BatchConfig(**changes)


def test_round_trip_and_unknown_keys():
    config = BatchConfig(mode="fairseq", max_tokens=1024, required_batch_size_multiple=8)
    assert BatchConfig.from_dict(config.to_dict()) == config
    assert config.replace(seed=5).seed == 5
    with pytest.raises(ConfigError, match="unknown batching settings"):
        BatchConfig.from_dict({"max_tokenz": 3})
