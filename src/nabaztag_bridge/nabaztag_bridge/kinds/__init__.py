"""Rabbit kinds: each a module with a RabbitLink subclass (base.py says how one plugs in)."""
