"""Running unattended: health for scripts and monitoring (``health``, from the inbox services'
heartbeats, ``core.inbox.heartbeat``, and the store; ``metrics``), systemd's notify protocol (``sd_notify``) and
the rotating log file (``logfile``)."""
