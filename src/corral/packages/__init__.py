"""Tool packages that ship with Corral."""
