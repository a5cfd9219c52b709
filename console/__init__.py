"""The operator's side: the command line and the Textual console."""
