"""Running a config: the plan, its units, executors, the run store, evaluation and figures."""
