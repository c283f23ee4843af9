#!/bin/bash
# experiments/hibert-whole-recipe/README.md: the shipped HIBERT's whole recipe from scratch in one run (both
# pre-training stages, then the --head-features 4 fine-tuning for seeds 1337, 2 and 3, the best by validation
# exported), two threads. Run from the repository root after `make`; as run, LONGCTX pointed at a copy of the
# build's longctx and the folder was /work/hr/run. Run it again to continue a stopped stage.
THREADS=2 bash bench/hibert_recipe.sh experiments/hibert-whole-recipe/run
