"""The checks of check_vectors.py, one module per spec (common.py: what they share)."""
