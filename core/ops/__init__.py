"""Running unattended: the heartbeat that says a receiver is here (``heartbeat``), health for
scripts and monitoring (``health``, ``metrics``), systemd's notify protocol (``sd_notify``) and
the rotating log file (``logfile``)."""
