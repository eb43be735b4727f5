"""``ai-search import PATH``: whichever export the path holds (``detect``), imported into the store.

report = import_path(store, Path("slack-export.zip"), progress=False)
print(report.summary())
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .imports.archive_limits import DEFAULT_ARCHIVE_LIMITS, ArchiveLimits
from .imports.batches import DEFAULT_IMPORT_BATCH_SIZE, ImportOptions, ImportReport
from .imports.bundle import Bundle, BundleError, open_bundle
from .imports.detect import Format, UnknownFormat, detect_format
from .imports.mapping import NO_MAPPING, MappingError, SourceMapping, check_mapping
from .store.base import Store

__all__ = ["ImportFailed", "import_path"]


BundleImporter = Callable[[Store, Bundle, ImportOptions], ImportReport]


class ImportFailed(Exception):
    """The export cannot be read at all (not a single record); the message says why."""


def import_path(
    store: Store,
    path: Path,
    *,
    progress: bool = True,
    batch_size: int = DEFAULT_IMPORT_BATCH_SIZE,
    source_url: str | None = None,
    format: Format | None = None,
    mapping: SourceMapping = NO_MAPPING,
    limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
) -> ImportReport:
    """Imports the export at ``path``, recognised by its content unless ``format`` says.

    ``source_url`` is the address of the source system, for the links back to it (Slack's
    ``https://acme.slack.com``, Mattermost's site URL, Zulip's organisation URL) where the export
    does not name it. ``mapping`` is the admin's word on which of the export's people and
    conversations are accounts and rooms here (``imports/mapping.py``); nothing else is taken for
    one by its name. Our own JSONL names accounts and rooms here itself, so it takes no mapping.
    ``limits`` bound what an archive may cost (``imports.archive_limits``): one that goes
    past them imports what came before and its report says where it stopped.

    Raises:
        ImportFailed: the path is no export ai-search reads, its archive cannot be opened, or the
            mapping names an account or room that is not here (checked before anything is written).
        StorageFailure: the database failed; what was imported stays, and importing again completes it.
    """
    try:
        found = format or detect_format(path, limits)
    except UnknownFormat as error:
        raise ImportFailed(str(error)) from None
    except OSError as error:
        raise ImportFailed(f"{path}: cannot be read ({error.strerror or error})") from None
    if found == "jsonl":
        if mapping:
            raise ImportFailed(
                f"{path} is ai-search's own JSONL, whose lines name accounts and rooms here themselves: "
                "a mapping applies to a Slack, Mattermost or Zulip export"
            )
        from .importer import import_jsonl

        return import_jsonl(store, path, progress=progress, batch_size=batch_size)
    try:
        check_mapping(store, mapping)
    except MappingError as error:
        raise ImportFailed(str(error)) from None
    options = ImportOptions(progress=progress, batch_size=batch_size, source_url=source_url, mapping=mapping)
    if found == "mattermost" and path.is_file() and not _is_archive(path):
        from .imports.mattermost import import_mattermost_file

        return import_mattermost_file(store, path, options)
    try:
        with open_bundle(path, limits=limits) as bundle:
            return _IMPORTERS[found]()(store, bundle, options)
    except BundleError as error:
        raise ImportFailed(str(error)) from None
    except OSError as error:
        raise ImportFailed(f"{path}: cannot be read ({error.strerror or error})") from None


def _slack() -> BundleImporter:
    from .imports.slack import import_slack

    return import_slack


def _mattermost() -> BundleImporter:
    from .imports.mattermost import import_mattermost

    return import_mattermost


def _zulip() -> BundleImporter:
    from .imports.zulip import import_zulip

    return import_zulip


# Each format's importer, loaded on first use so that ``ai-search import`` of one format loads only it.
_IMPORTERS: dict[str, Callable[[], BundleImporter]] = {
    "slack": _slack,
    "mattermost": _mattermost,
    "zulip": _zulip,
}


def _is_archive(path: Path) -> bool:
    import tarfile
    import zipfile

    return zipfile.is_zipfile(path) or tarfile.is_tarfile(path)
