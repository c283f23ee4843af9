#!/bin/bash
# The "none" and in-domain-only rows (experiments/hibert-eos0/README.md, "The EOS part starts at zero"); run from the repository
# root after `make`, beside go_a.sh. As run: LONGCTX pointed at a copy of the build's longctx.
SHAPE="--sent-words 4096" bash bench/hibert_intruders.sh eos0/b none
SHAPE="--sent-words 4096" MIN_LR=1e-3 BBC_STEPS=3000 bash bench/hibert_intruders.sh eos0/b indomain 0.25 1000
