"""Backups that restore: one archive of the store, the operators' key files and the config,
with a manifest that proves it whole (``archive``), checked by ``verify``, laid out again by
``restore``, and made on a schedule by ``watch`` (``schedule``)."""
