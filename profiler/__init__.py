"""rankmap's profiling side: launch a program under the PMPI profiler, read and merge
its run directory, model collectives as pair traffic, import foreign traffic formats."""
