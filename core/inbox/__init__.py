"""Inbox delivery: files and claims, the delivery of one file, and the service that runs both paths."""

from core.inbox.delivery import *  # noqa: F401,F403  (replaced by the split below)
