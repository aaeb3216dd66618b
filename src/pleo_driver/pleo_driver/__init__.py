"""Ugobe Pleo: the USB serial monitor driver (pleo_driver), its emulator, and urf_builder."""
