"""``--env-file`` saved by Notepad ("UTF-8" with a byte-order mark): the first variable is
read, not dropped under a name that starts with the mark."""

from __future__ import annotations

from pathlib import Path

from toolkit.cli._connect import read_env_file


def test_a_byte_order_mark_is_not_part_of_the_first_name(tmp_path: Path) -> None:
    path = tmp_path / "toolkit.env"
    path.write_bytes("\ufeffTOOLKIT_API_KEY=demo\r\nTOOLKIT_ENV=local\r\n".encode())
    assert read_env_file(path) == {"TOOLKIT_API_KEY": "demo", "TOOLKIT_ENV": "local"}
