"""Exports of prepared data into other systems' file formats (Tensor2Tensor's TFRecords).

:mod:`tokenmill.export.t2t` plans and serializes without TensorFlow; :mod:`tokenmill.export.tfrecord`
writes the files with TensorFlow's own writer and is imported only when an export runs.
"""
