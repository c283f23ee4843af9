/* longctx public API: the only header a program using the library includes. It gathers the parts:
 *   longctx/model.h    status codes, configuration, the model (lifetime, threads, forward/backward, memory)
 *   longctx/train.h    training, byte corpora and streams, evaluation, checkpoints, sampling
 *   longctx/summary.h  documents, sentences, summary labels and ROUGE
 *   longctx/lra.h      long-range classification data: ListOps, labelled TSV files, tokenization
 *   longctx/hibert.h   HIBERT, the hierarchical document model
 *   longctx/seq2seq.h  the vanilla encoder-decoder Transformer over bytes
 *   longctx/classify.h sequence classification on the encoder (ListOps, Text), its checkpoints
 *   longctx/version.h  LC_VERSION_*, lc_version(), the CPU code path (lc_cpu_path) */
#ifndef LONGCTX_H
#define LONGCTX_H

#include "longctx/model.h"
#include "longctx/train.h"
#include "longctx/summary.h"
#include "longctx/lra.h"
#include "longctx/hibert.h"
#include "longctx/seq2seq.h"
#include "longctx/classify.h"
#include "longctx/version.h"

#endif
