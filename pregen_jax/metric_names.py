"""The post-gen metric names every layer knows, spelled as pycocoevalcap and the 2018 table spell
them, in the toolkit's display order: the ranking recognises these columns in a table, the
meta-evaluations list metrics in this order (the post-gen registry adds its own names to both).
A leaf module, so that ``ranking`` and ``meta`` read one list without importing each other."""

POSTGEN_NAMES = ("Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "ROUGE_L", "CIDEr", "SPICE", "WMD")
