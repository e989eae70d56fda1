"""StylisticBias: which visual cues move multimodal LLMs' social judgments of people."""

__version__ = "0.1.0"
