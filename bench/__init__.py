"""interlink's benchmarks: `python -m bench --help` lists them.

Every benchmark runs interlink and its peers in one run, on this machine, and prints
them side by side with ratios; that table is the only source of speed claims.
"""
