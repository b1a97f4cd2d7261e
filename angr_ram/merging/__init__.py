"""Quantified state merging (planned)."""
