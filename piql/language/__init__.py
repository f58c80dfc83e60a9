"""The input language: schema and queries files -> Catalog and NamedQuery (pure; no database)."""
