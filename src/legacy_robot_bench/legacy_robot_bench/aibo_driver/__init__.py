"""aibo_driver's benchmark (bench.py) and fault-suite parts (soak.py)."""
