"""Errors a command raises to stop with one line for the operator."""


class CommandError(Exception):
    """A command cannot run; the message is the one line the operator sees."""
