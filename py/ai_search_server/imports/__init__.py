"""Imports of other systems' exports, and the live Rocket.Chat mirror, into the workspace store.

Modules, one noun each: ``batches`` (the report, rows to the store a batch at a time, the progress
bar), ``lines`` (capped JSON lines), ``bundle`` (an export's files in a folder, zip or tar.gz),
``detect`` (which format a path holds), ``fields`` (typed reads of untrusted JSON), ``markup`` (each
source's markup as plain text), ``mapping`` (an admin's word on which of a source's people and
rooms are accounts and rooms here), ``mirror`` (people, rooms, memberships, edits and deletions
applied to the store), ``slack``, ``mattermost``, ``zulip`` (one export format each), ``run``
(``import_path``: detect, then import), ``rocketchat_api`` and ``rocketchat`` (the live mirror).
Importers are loaded on first use, so importing this package costs nothing. docs/imports.md says
what each reads and how a second run behaves.
"""
