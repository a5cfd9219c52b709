"""The console's screens, one module each; ``Panel`` is their common base."""
