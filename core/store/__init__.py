"""The store: opening the database, its schema, the ledger writes and the read queries."""
