"""The pure rules: no I/O, no database, no threads (a test checks the imports)."""
