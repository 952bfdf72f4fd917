"""The trained model: prediction rules, the scoring scan, counts, margins and bounds."""
