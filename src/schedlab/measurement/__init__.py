"""What a run measured, read from the engine's state after (or while) it runs: the metrics with
their batch-means intervals, the stability trend test, which estimates can be trusted, the
utilization and loss of capacity of a replay, and the per-job table streamed to Parquet."""
