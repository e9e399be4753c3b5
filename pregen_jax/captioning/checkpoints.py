"""Moved to ``pregen_jax.training.checkpoints`` (below ``datasets``, which saves its image
encoder with it); this name stays for callers written before the move."""
from ..training.checkpoints import check_meta, fingerprint, load, resume, save

__all__ = ["check_meta", "fingerprint", "load", "resume", "save"]
