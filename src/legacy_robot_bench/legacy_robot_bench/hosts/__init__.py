"""Hosts made of network namespaces on this machine (network.py), the userspace link between
them (link_emulator.py), and the across-hosts benchmark (bench.py, with stream_meter.py on the
desk host). Used by test/test_two_hosts.py and by `hosts_bench`."""
