"""Building blocks of the Tensor2Tensor-compatible SubwordTextEncoder (see ``tokenmill.vocab.t2t_subword``)."""
