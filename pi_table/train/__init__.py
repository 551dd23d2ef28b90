"""Training code (optional extra `train`)."""
