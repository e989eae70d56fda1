"""The protocol parts every engine shares: imported by engines and by the scores stage, they
import no engine.

:mod:`.settings` (the ``judge`` section, typed), :mod:`.prompts` (forced-choice prompts as chat
messages), :mod:`.parsing` (a response -> (a) / (b) / invalid), :mod:`.outcomes` (what a decoder
returns for one judgment cell) and :mod:`.distribution` (the exact distribution of one prompt's
parse verdict).
"""
