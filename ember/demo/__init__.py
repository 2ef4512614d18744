"""``python -m ember.demo``: train an MLP and a small CNN on scikit-learn's bundled handwritten digits.

The training code is written once against the PyTorch API and run with ``lib = ember`` (and, with
``--compare-torch``, with ``lib = torch`` from the same seed): see :mod:`ember.demo.train`.
Needs the ``demo`` extra (scikit-learn, tqdm, matplotlib).
"""
