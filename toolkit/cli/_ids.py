"""The order-id files of ``toolkit load --ids-file`` and ``toolkit sync --ids``: one id a
line, read the same way by both (a BOM, blank lines and ``#`` comments skipped; each id
checked, named by file and line)."""

from __future__ import annotations

from pathlib import Path

from toolkit.errors import InvalidRequest
from toolkit.protocol import validate_order_id


def read_ids_file(path: Path, option: str = "--ids-file") -> list[str]:
    """The order ids of ``path``: one per line, blank lines and ``#`` comments skipped; a
    UTF-8 BOM (what Notepad and Excel write as "UTF-8") is not part of the first id. A
    missing or unreadable file, or a bad id (named with its file and line), is an
    InvalidRequest naming ``option``, before anything is sent or written."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InvalidRequest(f"{option}: no file {path}") from None
    except IsADirectoryError:
        raise InvalidRequest(f"{option}: {path} is a folder, not a file of order ids") from None
    except UnicodeDecodeError as exc:
        raise InvalidRequest(
            f"{option} {path}: not UTF-8 text (byte {exc.start}); save it as UTF-8, one "
            "order id per line"
        ) from None
    ids: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        oid = line.strip()
        if not oid or oid.startswith("#"):
            continue
        try:
            ids.append(validate_order_id(oid))
        except InvalidRequest as exc:
            raise InvalidRequest(f"{option} {path}:{number}: {exc}") from None
    return ids
