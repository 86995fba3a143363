"""The parallelization search: expert strategies (`experts`), and later the machine and cost models, the
simulator and the MCMC / exact searches that pick a strategy for a graph and a machine."""
