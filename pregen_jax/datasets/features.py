"""Image feature files: ``.npy`` f[N, D], ``.npz`` (one array, or ``features`` + ``image_ids``),
and Karpathy's ``vgg_feats.mat`` (``feats``: f[D, N], columns in the JSON's image order).

A file without image ids (``.npy``, ``.mat``, a one-array ``.npz``) must have one row per
image of the corpus in the corpus's own order (``ROW_ORDER``); an ``.npz`` with ``features``
and ``image_ids`` may hold any images in any order."""
from __future__ import annotations

from pathlib import Path

import numpy as np

ROW_ORDER = ("Karpathy JSON: every image of the file in its order; Flickr8k: every line of "
             "Flickr_8k.trainImages.txt, then devImages, then testImages")


def read_features(path, image_ids: list[str] | None = None, all_image_ids: list[str] | None = None) -> np.ndarray:
    """Features f32[N, D] for ``image_ids``.

    Args:
      path: the feature file.
      image_ids: the images wanted, in order; None = every row.
      all_image_ids: the image of each row, when the file itself does not name them
        (``.npy``, ``.mat``): e.g. every image of the Karpathy JSON in file order.
    Raises ValueError naming the file and the first image without features.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: feature file not found")
    row_ids = all_image_ids
    try:
        if path.suffix == ".npy":
            feats = np.load(path, allow_pickle=False)
        elif path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as npz:
                if "features" in npz.files:
                    feats = npz["features"]
                    if "image_ids" in npz.files:
                        row_ids = [str(i) for i in npz["image_ids"]]
                elif len(npz.files) == 1:
                    feats = npz[npz.files[0]]
                else:
                    raise ValueError(f"{path}: an .npz with several arrays needs one named 'features'")
        elif path.suffix == ".mat":
            from scipy.io import loadmat
            mat = loadmat(path)
            if "feats" not in mat:
                raise ValueError(f"{path}: no 'feats' array (Karpathy's vgg_feats.mat layout is feats: [D, N])")
            feats = mat["feats"].T
        else:
            raise ValueError(f"{path}: unknown feature format {path.suffix!r} (use .npy, .npz or .mat)")
    except Exception as err:
        if isinstance(err, ValueError) and str(err).startswith(str(path)):
            raise
        raise ValueError(f"{path}: cannot read features ({type(err).__name__}: {err})") from err
    feats = np.asarray(feats, np.float32)
    if feats.ndim != 2:
        raise ValueError(f"{path}: features must be 2-D [images, dims], got shape {feats.shape}")
    if not np.isfinite(feats).all():
        raise ValueError(f"{path}: features contain NaN or inf (row {int(np.argwhere(~np.isfinite(feats))[0, 0])})")
    if image_ids is None:
        return feats
    if row_ids is None:
        if len(image_ids) != len(feats):
            raise ValueError(f"{path}: {len(feats)} feature rows for {len(image_ids)} images, and the file names no "
                             "images: use an .npz with arrays 'features' and 'image_ids'")
        return feats
    if len(row_ids) != len(feats):
        raise ValueError(f"{path}: {len(feats)} feature rows but the corpus lists {len(row_ids)} images, whose order "
                         f"the rows must follow ({ROW_ORDER}); or use an .npz with arrays 'features' and 'image_ids'")
    row_of = {image_id: n for n, image_id in enumerate(row_ids)}
    missing = [i for i in image_ids if i not in row_of]
    if missing:
        raise ValueError(f"{path}: no features for image {missing[0]} ({len(missing)} images missing)")
    return feats[[row_of[i] for i in image_ids]]
