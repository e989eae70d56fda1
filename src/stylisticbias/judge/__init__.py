"""Judging: forced-choice prompts, response parsing, engines and batched prediction."""
