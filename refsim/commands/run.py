"""``refsim run``."""
