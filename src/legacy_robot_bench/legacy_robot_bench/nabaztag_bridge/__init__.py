"""nabaztag_bridge's benchmark (bench.py) and fault-suite parts (soak.py)."""
