"""Modal screens: confirmation, help, and the signing dialogs."""
