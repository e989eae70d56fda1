"""Judgments in and out in the raw layout of the paper's released code.

The released code's judgement pipeline (``src/judgement/judgement_pipeline.py`` of
``timo-cavelius/StylisticBias``) writes one JSON file per call::

    <root>/<model>/<face>/<image>/<image>_scenario{S}_order{O}_seed{K}.json

with the fields ``face_image_name, characteristics, order, seed, prompt, timestamp, options
{a, b}, chosen_option`` (the chosen option's text or ``unknown``) and ``raw_output``. Its four
orders are ours (App. C.2: 1 (a)=positive first, 2 (b)=negative first, 3 (a)=negative first,
4 (b)=positive first) when its scenario's option ``a`` is our positive pole; every imported file's
``options`` are checked against that.

* :func:`~.export.export_judgments` writes our drawn judgments (seed >= 1) in that layout, so
  the released evaluation scripts run on our results; it adds one field the released code
  ignores, ``stylisticbias`` (our row), so that an export imports back without loss.
* :func:`~.importer.import_official` streams such a tree (millions of files) into our judgments
  table: files are read in sorted directory order, a face directory at a time; rows are written
  to Parquet parts of ``batch_files`` files; ``_progress.jsonl`` records every finished part, so
  an interrupted import resumes after the last one; memory holds one part. A file written by the
  released code is re-read by our parser
  (:func:`~stylisticbias.judge.protocol.parsing.parse_response`); one written by
  :func:`~.export.export_judgments` restores its row. A bad file (truncated JSON, a name that is
  not the layout's, an unknown scenario or ordering, options that do not match, an image we do
  not know) is one log line; ``on_error="stop"`` stops at the first.

The modules: :mod:`.layout` (file names, the row's columns), :mod:`.export`, :mod:`.importer`
and :mod:`.cli`, the command line:
``python -m stylisticbias.judge.official_layout export|import --help``.
"""
