"""Linear codes over a :class:`mpi_coded.fields.Field` (pure, no MPI)."""

from mpi_coded.codes.mds import DecoderCache, condition_number, systematic_mds, worst_condition

__all__ = ["DecoderCache", "condition_number", "systematic_mds", "worst_condition"]
