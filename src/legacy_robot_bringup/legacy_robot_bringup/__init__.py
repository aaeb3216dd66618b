"""Bring-up of the legacy robot drivers: composition, demo and launch helpers."""
