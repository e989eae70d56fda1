"""The StylisticBias family's analyze and calibrate stages."""
