"""The scores stage's columnar engine: judgments Parquet -> Arrow / numpy -> the score partition.

The ``scores@MODEL`` stage does little arithmetic over millions of judgment rows; this package
does it without pandas or pandera (neither is imported): the judgments are read as Arrow
columns (strings dictionary-encoded), checked with vectorised Arrow kernels, grouped by
(image, scenario) through one integer key, reduced with numpy over the runs of rows of each cell
(``np.add.reduceat``: the sums and means the pandas engine of :mod:`stylisticbias.scores` takes
for sorted groups, so every float is the same to the last bit), joined to the dataset tables by
integer indices and written as the same Parquet bytes (the schema, its pandas metadata, the
row order) as :func:`stylisticbias.score_store.write_model_scores` writes from the pandas
engine's table. The output is checked once against :data:`PARTITION_COLUMNS` -- the ``SCORES``
schema's columns, types, nullability and ranges, kept equal to the pandera schema by a test.

It scores what the judge stage writes for the paper's reader: the ``binary_choice`` task,
``judge.parser: paper``, ``analysis.definitions: paper``, drawn rows (seed >= 1: ``generate``,
``sampled``, ``simulated``), one model, every cell one run of rows. Anything else -- exact-only
tables (the paper estimator's seeded draws), the official reader, unsorted or otherwise unusual
tables, and every table that fails a check -- returns ``None`` from :func:`score_partition`, and
the stage falls back to the pandas engine (:func:`stylisticbias.scores.compute_scores`), which
computes the same numbers and raises the one-line errors naming the file, row and column.

Modules: :mod:`~stylisticbias.scores_columnar.checks` (the judgments' columns and their
vectorised checks), :mod:`~stylisticbias.scores_columnar.reader` (the row groups reduced per
cell), :mod:`~stylisticbias.scores_columnar.partition` (the output schema and the score table),
:mod:`~stylisticbias.scores_columnar.images` (the dataset indexed by image, the partition's row
order), :mod:`~stylisticbias.scores_columnar.encoding` (string columns handed to the Parquet
writer dictionary-encoded where it writes the same bytes),
:mod:`~stylisticbias.scores_columnar.split_write` (the columns encoded by two writers at once),
:mod:`~stylisticbias.scores_columnar.arrays` (Arrow <-> numpy without pandas). The package
imports none of them: the stage's reading thread imports the reader (Parquet and numpy) and
starts decoding while the main thread imports the rest.
"""
