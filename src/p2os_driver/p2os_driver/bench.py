"""Placeholder replaced below."""
def main():
    return 0
