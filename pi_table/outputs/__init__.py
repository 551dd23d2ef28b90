"""Output stage: token LEDs and buttons (gpio) and the live pages for phones (web)."""
