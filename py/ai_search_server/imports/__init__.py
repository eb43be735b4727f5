"""Imports of other systems' exports, and the live Rocket.Chat mirror, into the workspace store.

Modules, one noun each: ``batches`` (the report, batching and progress every import shares),
``bundle`` (an export's files in a directory, zip or tar.gz), ``detect`` (which format a path
holds), ``markup`` (each source's markup as plain text), ``mirror`` (people, rooms, memberships,
edits and deletions applied to the store), ``slack``, ``mattermost``, ``zulip`` (one export format
each), ``run`` (``import_path``: detect, then import) and ``rocketchat`` (the live mirror).
Importers are loaded on first use, so importing this package costs nothing.
"""
