"""A periodic refresh on Spark with its results computed, ranked and written in the
executors: one task per staging partition reads its bounded share (counting the tuples it
read: only the counts reach the driver, which checks them against the bound before
anything is written), Spark merges the shares and runs the periodic query, numbers the
rows (per epoch and parameter values for a time window: ``ROW_NUMBER`` over the query's
order, NULLs first ascending and last descending as the store sorts them; in the query's
order for a tuple window), and the tasks write them into a staging table the driver swaps
in (``SparkJobs.write``)."""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Window, functions as F

from piql import sqlgen
from piql.engines.base import Share
from piql.planner.refresh_plan import RefreshPlan
from piql.runtime.refresh import _share_values, bind_epoch
from piql.runtime.spark_jobs import SparkJobs
from piql.runtime.spark_source import converter, spark_schema
from piql.runtime.store import Store


class SparkRefresh:
    """One refresh's results as Spark frames (``refresh.DriverResults``' counterpart)."""

    def __init__(self, jobs: SparkJobs, store: Store, plan: RefreshPlan) -> None:
        self.jobs, self.store, self.plan = jobs, store, plan
        self.frames: dict[int | None, DataFrame] = {}
        self.cached: list[Any] = []

    def compute(self, epochs: list[int | None]) -> int:
        """Every epoch's ranked rows, as a frame computed in the tasks; the most tuples one
        task read (the shares are read now, the rest when the frames are written)."""
        plan, engine = self.plan, self.jobs.engine
        statement = sqlgen.block_sql(plan.shares.read, self.store.dialect)
        reader = self.store.reader()
        busiest = 0
        for epoch in epochs:
            shares = [Share(statement, _share_values(plan, p, epoch), plan.shares.keys)
                      for p in range(plan.layout.partitions)]
            per_task, reads = engine.share_tasks(reader, shares)
            self.cached.append(per_task)
            busiest = max(busiest, reads)
            engine.share_frame(per_task, plan.staging, plan.shares.columns, plan.shares.types)
            query = plan.merge if epoch is None else bind_epoch(plan.merge, epoch)
            result = self.jobs.session.sql(sqlgen.block_sql(query, "spark"))
            self.frames[epoch] = self._ranked(result, epoch)
        return busiest

    def _ranked(self, result: DataFrame, epoch: int | None) -> DataFrame:
        """The view's rows of ``result``, numbered as ``refresh.ranked_tuples`` and
        ``refresh.ranked_groups`` number them, with the view's columns and types."""
        plan = self.plan
        columns = self.store.shapes[plan.view].columns
        schema = spark_schema(columns, self.jobs.view_types(plan.view))
        convert = converter(schema)
        if epoch is None:
            if not plan.ranked:
                return self.jobs.session.createDataFrame(result.rdd.map(convert), schema)
            # ORDER BY ... LIMIT: one sorted partition, numbered in its order
            numbered = result.rdd.zipWithIndex().map(lambda done: convert((done[1] + 1, *done[0])))
            return self.jobs.session.createDataFrame(numbered, schema)
        named = result.toDF(*(i.name for i in plan.merge.select))
        order = [F.col(f"_order{i}").desc_nulls_last() if desc else
                 F.col(f"_order{i}").asc_nulls_first() for i, desc in enumerate(plan.descending)]
        window = Window.partitionBy(*plan.group_key).orderBy(
            *(order or [F.monotonically_increasing_id()]))
        ranked = named.withColumn("rank", F.row_number().over(window))
        if plan.limit:
            ranked = ranked.where(F.col("rank") <= plan.limit)
        return self.jobs.session.createDataFrame(
            ranked.select(*plan.columns).rdd.map(convert), schema)

    def write(self, epoch: int | None) -> int:
        """Replace the view's rows of ``epoch`` by the tasks' (inside the caller's
        transaction)."""
        written, _ = self.jobs.write(self.frames[epoch], self.plan.view,
                                     where=None if epoch is None else {"epoch": epoch})
        return written

    def close(self) -> None:
        for per_task in self.cached:
            per_task.unpersist()
        self.cached.clear()
