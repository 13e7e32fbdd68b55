"""docket: context assembly for retrieval-augmented generation."""

__version__ = "0.1.0"
