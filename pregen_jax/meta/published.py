"""Published numbers that the reports set beside ours.

MUTT (accuracy in percent at 5, 10, 20 references):
- ``MUTT_PAPER``: Boag et al. (2016), Tables 4-6 (their "BLEU" is BLEU-4: its values equal the
  Bleu_4 rows of the repository file below). No row for ``shuffled``, which the tables leave out.
- ``MUTT_REPO``: ``results/coco.txt`` of github.com/text-machine-lab/MUTT at commit 455f4be, the
  commit whose ``src/tmp/*.json`` test sets are the ones in ``../shared/data/mutt`` (scored with
  coco-caption, i.e. the PTB tokenizer). Their script records a metric only after its first
  passing trial, so the metrics missing from that file (Bleu_1 of ``shuffled`` and
  ``swap_chunks``) passed no trial: 0.0 here.

Human judgments (Kendall tau x 100): CLIPScore (Hessel et al. 2021), Table 1.
"""
from __future__ import annotations

MUTT_PAPER = {
    ("neg_subj", "CIDEr"): (99.4, 99.4, 99.4), ("neg_subj", "Bleu_4"): (99.1, 99.7, 99.7),
    ("neg_subj", "METEOR"): (97.0, 98.5, 98.2),
    ("neg_verb", "CIDEr"): (98.5, 98.5, 98.5), ("neg_verb", "Bleu_4"): (97.5, 97.5, 98.0),
    ("neg_verb", "METEOR"): (96.0, 96.0, 97.0),
    ("sem_opps", "CIDEr"): (86.2, 92.7, 93.5), ("sem_opps", "Bleu_4"): (76.4, 85.4, 88.6),
    ("sem_opps", "METEOR"): (80.9, 86.6, 91.5),
    ("passive", "CIDEr"): (5.5, 0.8, 2.5), ("passive", "Bleu_4"): (7.6, 4.6, 3.8),
    ("passive", "METEOR"): (23.9, 16.0, 13.0),
    ("near_syms", "CIDEr"): (32.1, 26.2, 30.0), ("near_syms", "Bleu_4"): (45.0, 36.7, 34.2),
    ("near_syms", "METEOR"): (62.1, 62.1, 62.1),
    ("det_sub", "CIDEr"): (40.0, 38.5, 56.9), ("det_sub", "Bleu_4"): (21.5, 27.7, 53.8),
    ("det_sub", "METEOR"): (55.4, 55.4, 70.8),
    ("double_PP", "CIDEr"): (100.0, 99.0, 100.0), ("double_PP", "Bleu_4"): (100.0, 100.0, 100.0),
    ("double_PP", "METEOR"): (95.1, 98.5, 99.5),
    ("remove_prep", "CIDEr"): (69.5, 76.8, 80.8), ("remove_prep", "Bleu_4"): (63.5, 81.3, 87.7),
    ("remove_prep", "METEOR"): (60.6, 72.9, 84.2),
    ("swap_chunks", "CIDEr"): (91.4, 95.6, 96.6), ("swap_chunks", "Bleu_4"): (83.0, 91.4, 94.2),
    ("swap_chunks", "METEOR"): (81.2, 89.6, 92.4),
}

_REPO_ROWS = {  # metric: (5, 10, 20) per corruption, as results/coco.txt lists them
    "neg_subj": {"CIDEr": (99.4, 99.4, 99.4), "Bleu_4": (99.1, 99.7, 99.7), "Bleu_3": (99.1, 100.0, 100.0),
                 "Bleu_2": (99.1, 100.0, 100.0), "Bleu_1": (99.1, 99.7, 99.4), "ROUGE_L": (99.1, 98.5, 99.7),
                 "METEOR": (97.0, 98.5, 98.2)},
    "det_sub": {"CIDEr": (40.0, 38.5, 56.9), "Bleu_4": (21.5, 27.7, 53.8), "Bleu_3": (26.2, 32.3, 72.3),
                "Bleu_2": (38.5, 50.8, 92.3), "Bleu_1": (50.8, 66.2, 98.5), "ROUGE_L": (21.5, 29.2, 52.3),
                "METEOR": (55.4, 55.4, 70.8)},
    "near_syms": {"Bleu_3": (43.8, 39.6, 37.9), "Bleu_4": (45.0, 36.7, 34.2), "CIDEr": (32.1, 26.2, 30.0),
                  "Bleu_2": (49.2, 47.1, 52.5), "Bleu_1": (53.3, 62.1, 72.1), "ROUGE_L": (52.1, 55.0, 61.3),
                  "METEOR": (62.1, 62.1, 62.1)},
    "passive": {"CIDEr": (5.1, 0.5, 2.8), "Bleu_4": (4.7, 3.3, 2.8), "Bleu_3": (4.7, 3.7, 3.3),
                "Bleu_2": (6.5, 4.2, 4.7), "Bleu_1": (14.0, 14.5, 28.0), "ROUGE_L": (8.4, 4.2, 6.1),
                "METEOR": (20.6, 12.6, 9.3)},
    "sem_opps": {"CIDEr": (86.2, 92.7, 93.5), "Bleu_4": (76.4, 85.4, 88.6), "Bleu_3": (76.4, 85.4, 87.4),
                 "Bleu_2": (76.0, 84.6, 86.6), "Bleu_1": (73.6, 82.1, 79.3), "ROUGE_L": (73.2, 84.6, 88.2),
                 "METEOR": (80.9, 86.6, 91.5)},
    "neg_verb": {"CIDEr": (99.0, 99.0, 99.0), "Bleu_4": (98.0, 98.0, 98.5), "Bleu_3": (96.5, 98.0, 98.5),
                 "Bleu_2": (95.5, 97.5, 98.0), "Bleu_1": (88.9, 92.4, 96.0), "ROUGE_L": (98.0, 98.0, 97.0),
                 "METEOR": (97.0, 97.0, 98.0)},
    "shuffled": {"CIDEr": (85.7, 85.7, 100.0), "Bleu_4": (85.7, 85.7, 100.0), "Bleu_3": (85.7, 85.7, 100.0),
                 "Bleu_2": (78.6, 78.6, 92.9), "Bleu_1": (0.0, 0.0, 0.0), "ROUGE_L": (64.3, 78.6, 92.9),
                 "METEOR": (85.7, 85.7, 100.0)},
    "swap_chunks": {"CIDEr": (90.4, 95.4, 97.4), "Bleu_4": (80.6, 90.0, 94.6), "Bleu_3": (80.6, 90.0, 94.4),
                    "Bleu_2": (75.2, 86.8, 91.2), "Bleu_1": (0.0, 0.0, 0.0), "ROUGE_L": (89.4, 93.4, 95.6),
                    "METEOR": (80.4, 89.6, 92.4)},
    "double_PP": {"CIDEr": (100.0, 99.0, 100.0), "Bleu_4": (100.0, 100.0, 100.0), "Bleu_3": (100.0, 100.0, 100.0),
                  "Bleu_2": (100.0, 100.0, 100.0), "Bleu_1": (98.0, 99.5, 100.0), "ROUGE_L": (94.1, 98.5, 98.5),
                  "METEOR": (95.0, 98.5, 99.5)},
    "remove_prep": {"CIDEr": (69.8, 76.7, 80.7), "Bleu_4": (63.9, 81.2, 87.6), "Bleu_3": (65.8, 83.7, 90.1),
                    "Bleu_2": (67.8, 84.2, 89.6), "Bleu_1": (71.8, 84.2, 87.6), "ROUGE_L": (62.9, 65.3, 69.3),
                    "METEOR": (60.9, 72.8, 84.2)},
}
MUTT_REPO = {(corruption, metric): values for corruption, row in _REPO_ROWS.items() for metric, values in row.items()}
MUTT_KS = (5, 10, 20)

# CLIPScore (Hessel et al. 2021), Table 1: Kendall tau x 100 (tau-c for Expert, tau-b for CrowdFlower).
CLIPSCORE_TABLE1 = {
    ("Flickr8k-Expert", "Bleu_1"): 32.3, ("Flickr8k-Expert", "Bleu_4"): 30.8, ("Flickr8k-Expert", "ROUGE_L"): 32.3,
    ("Flickr8k-Expert", "METEOR"): 41.8, ("Flickr8k-Expert", "CIDEr"): 43.9, ("Flickr8k-Expert", "SPICE"): 44.9,
    ("Flickr8k-CrowdFlower", "Bleu_4"): 16.9, ("Flickr8k-CrowdFlower", "METEOR"): 22.2,
    ("Flickr8k-CrowdFlower", "CIDEr"): 24.6,
}
