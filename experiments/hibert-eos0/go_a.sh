#!/bin/bash
# The out-of-domain + in-domain row (experiments/hibert-eos0/README.md, "The EOS part starts at zero"); run from the repository
# root after `make`. As run: LONGCTX pointed at a copy of the build's longctx; output went to eos0/a.
SHAPE="--sent-words 4096" MIN_LR=1e-3 OOD_STEPS=4000 OOD_BATCH=16 BBC_STEPS=1000 \
  bash bench/hibert_intruders.sh eos0/a ood 0.25 1000
