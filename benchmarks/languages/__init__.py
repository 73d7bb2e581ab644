"""Languages: XQuAD in every language, the multilingual path's speed, segmenters, follow-ups."""
