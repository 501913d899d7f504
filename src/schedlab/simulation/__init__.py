"""The simulation pipeline above the compiled engine: compile a spec (model/compile.py), generate
its jobs (workloads/), run the engine with the policy (engine/, policies/) and collect the
:class:`~schedlab.simulation.result.Result`."""
