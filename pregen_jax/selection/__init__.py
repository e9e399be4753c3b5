"""Choosing the best of N models by racing them on real post-gen scores.

``race`` (any model as a ``Candidate``: a name, a ``generate(images) -> captions`` callable, and an
optional prior; ``select`` races them) and ``search_models`` (a finished
search's models as candidates, and ``run_select``, what ``pregen-search select --search`` runs) and
``caption_files`` (caption files raced alone against a references file, ``select --references``) and
``tracker`` (keep the best checkpoint while training: ``Tracker.offer`` decides each new one).
"""
from ..ranking.racing import RaceSettings
from .caption_files import FileRace, read_file_race, select_files
from .race import Candidate, Selection, check_metric, lookup, mean_metrics, race_candidates, select
from .search_models import logged_perplexity, model_candidate, run_select, search_candidates
from .tracker import Tracker, Verdict

__all__ = ["Candidate", "FileRace", "RaceSettings", "Selection", "check_metric", "logged_perplexity",
           "lookup", "mean_metrics", "model_candidate", "race_candidates", "read_file_race", "run_select",
           "search_candidates", "select", "select_files", "Tracker", "Verdict"]
