"""Chunk stores: in-memory, SQLite (embedded default) and PostgreSQL + pgvector."""

from docket.store.base import ChunkLookup, MemoryStore, VersionInfo, neighbours, section_of, version_in_force

__all__ = ["ChunkLookup", "MemoryStore", "VersionInfo", "neighbours", "section_of", "version_in_force"]
