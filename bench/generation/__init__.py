"""Generation benchmark: acceptance rate of generated checks on held-back rows."""
