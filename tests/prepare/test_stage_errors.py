"""An operating-system failure inside a stage, as the one error line the user sees: the stage, where, the fix."""

from __future__ import annotations

import errno
from pathlib import Path

from tokenmill.prepare.stages.base import stage_io_error


def test_a_full_disk_names_the_folder_written_to_and_the_fix():
    error = stage_io_error("encode.train.en", OSError(errno.ENOSPC, "No space left on device"), Path("/data/bin"))
    assert str(error) == ("stage encode.train.en: writing in /data/bin: No space left on device; free space on "
                          "that device or choose another --destdir, then re-run: finished stages are kept")


def test_a_named_file_is_named_and_a_lost_connection_is_not_called_a_write():
    missing = stage_io_error("clean.train", FileNotFoundError(errno.ENOENT, "No such file or directory", "/x/a.en"),
                             Path("/d"))
    assert str(missing).startswith("stage clean.train: /x/a.en: No such file or directory; check the path")
    reset = stage_io_error("clean.train", ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"),
                           Path("/d"))
    assert str(reset).startswith("stage clean.train: Connection reset by peer; check the path or the connection")
    assert "writing in" not in str(reset)
