"""Judgments in and out in the raw layout of the paper's released code.

The released code's judgement pipeline (``judgement/judgement_pipeline.py`` of
``timo-cavelius/StylisticBias``) writes one JSON file per call::

    <root>/<model>/<face>/<image>/<image>_scenario{S}_order{O}_seed{K}.json

where ``S`` is the index into its ``config/judgement_scenarios.json`` (not our Table-1 id: the
protocol's ``released.scenario_order`` maps the two), the base image's folder is named like the
face's, and the fields are ``face_image_name, characteristics, order, seed, prompt, timestamp,
options {a, b}, chosen_option`` (the chosen option's text or ``unknown``) and ``raw_output``,
in its spellings (``Emotionally stable``; ``fashion_style: Formal / Evening wear``; its quoted
prompt). Its four orders are ours (App. C.2) when its option ``a`` is our positive pole; every
imported file's ``options`` are checked against that.

* :func:`~.export.export_judgments` writes our drawn judgments (seed >= 1) in that layout, so
  the released evaluation scripts read our results as their own; it adds one field the released
  code ignores, ``stylisticbias`` (our row), so that an export imports back without loss.
* :func:`~.importer.import_official` streams such a tree (millions of files) into our judgments
  table and maps every file back (scenario index, options, image folder -> our image id); what a
  row cannot hold goes to ``released.parquet``, from which an export writes the same files
  again. A file that cannot be mapped stops the import with one line naming it
  (``on_error="skip"``: every such file is listed and the command exits 1). A file written by
  the released code is re-read by our parser
  (:func:`~stylisticbias.judge.protocol.parsing.parse_response`; ``choice="released"``: its
  ``chosen_option``); one written by :func:`~.export.export_judgments` restores its row.

The modules: :mod:`.layout` (file names, spellings, the row's columns), :mod:`.export`,
:mod:`.importer` and :mod:`.cli`, the command line:
``python -m stylisticbias.judge.official_layout export|import --help``.
"""
