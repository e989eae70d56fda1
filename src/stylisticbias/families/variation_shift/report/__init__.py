"""The StylisticBias family's report and track stages."""
