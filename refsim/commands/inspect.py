"""``refsim inspect``."""
