"""Task stores: the interface (`_base`) and its memory, SQLite and PostgreSQL implementations."""
