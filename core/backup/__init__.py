"""Backups that restore: one file of the store, the operators' key files and the config, with a
manifest that proves it whole (its format: ``archive``), written by ``make``, checked by
``verify``, laid out again as a home by ``restore``, and made on a schedule by ``watch``
(``schedule``)."""
