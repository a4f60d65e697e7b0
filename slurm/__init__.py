"""rankmap's Slurm side: the profile-then-launch workflow, the srun/sbatch wrappers,
and the local multi-node test cluster."""
